from django.urls import path

from . import views_chargeback

app_name = "chargeback"

urlpatterns = [
    path("", views_chargeback.statement_view, name="statement"),
    path("close/", views_chargeback.close_view, name="close"),
]
