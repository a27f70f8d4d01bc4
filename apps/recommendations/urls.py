from django.urls import path

from . import rightsizing_views, views

app_name = "advice"

urlpatterns = [
    path("", views.advice, name="advice"),
    path("alerts/", views.alerts, name="alerts"),
    path("rightsizing/", rightsizing_views.rightsizing, name="rightsizing"),
]
