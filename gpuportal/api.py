"""The one DRF router: every /api/v1/ endpoint is registered here."""
from django.urls import path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import DefaultRouter

from apps.recommendations.api import QuotaRecommendationsView
from apps.reports.api.chargeback import ChargebackView, ChargebackXLSXView, ClosePeriodView, ReopenPeriodView
from apps.reports.api.idle import IdleView
from apps.reports.api.rates import RateDetailView, RateListView
from apps.reports.api.usage import UsageView

router = DefaultRouter()

urlpatterns = [
    path("usage/", UsageView.as_view(), name="api-usage"),
    path("quota-recommendations/", QuotaRecommendationsView.as_view(), name="api-quota-recommendations"),
    path("chargeback/", ChargebackView.as_view(), name="api-chargeback"),
    path("chargeback/xlsx/", ChargebackXLSXView.as_view(), name="api-chargeback-xlsx"),
    path("chargeback/close/", ClosePeriodView.as_view(), name="api-chargeback-close"),
    path("chargeback/reopen/", ReopenPeriodView.as_view(), name="api-chargeback-reopen"),
    path("rates/", RateListView.as_view(), name="api-rates"),
    path("rates/<int:pk>/", RateDetailView.as_view(), name="api-rate"),
    path("idle/", IdleView.as_view(), name="api-idle"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
] + router.urls
