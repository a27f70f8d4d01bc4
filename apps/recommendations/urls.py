from django.urls import path

from . import views

app_name = "advice"

urlpatterns = [
    path("", views.advice, name="advice"),
    path("alerts/", views.alerts, name="alerts"),
]
