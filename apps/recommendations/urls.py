from django.urls import path

from apps.recommendations.rightsizing import views as rightsizing_views
from apps.recommendations import views

app_name = "advice"

urlpatterns = [
    path("", views.advice, name="advice"),
    path("alerts/", views.alerts, name="alerts"),
    path("rightsizing/", rightsizing_views.rightsizing, name="rightsizing"),
]
