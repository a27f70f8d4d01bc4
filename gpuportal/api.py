"""Every /api/v1/ endpoint is listed here; /api/v1/ itself answers with their absolute URLs.

The OpenAPI document, Swagger UI and ReDoc are served here too (docs/api.md), from the
drf-spectacular-sidecar static files: no CDN (ReDoc's bundle with its footer logo made local).
"""
import functools
from pathlib import Path

from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.contrib.staticfiles import finders
from django.http import HttpResponse
from django.templatetags.static import static
from django.urls import path, reverse
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework.exceptions import NotAuthenticated
from rest_framework.routers import APIRootView

from apps.recommendations.api import QuotaRecommendationsView
from apps.recommendations.rightsizing.api import RightsizingView
from apps.reports.api.chargeback import ChargebackView, ChargebackXLSXView, ClosePeriodView, ReopenPeriodView
from apps.reports.api.focus import FocusExportView
from apps.reports.api.forecast import ForecastView
from apps.reports.api.idle import IdleView
from apps.reports.api.rates import RateDetailView, RateListView
from apps.reports.api.usage import UsageView


class SignInFirst:
    """The docs are pages: a browser with no session is sent to sign in, as on every page
    (a wrong token is still a 401)."""

    def handle_exception(self, exc):
        if isinstance(exc, NotAuthenticated):
            return redirect_to_login(self.request.get_full_path())
        return super().handle_exception(exc)


class SwaggerUI(SignInFirst, SpectacularSwaggerSplitView):
    """Its start-up script is served from this URL (?script), not inline: the CSP forbids inline scripts.
    The page has a link back to the portal above it."""
    template_name = "api/swagger_ui.html"


class ReDoc(SignInFirst, SpectacularRedocView):
    template_name = "api/redoc.html"

    @staticmethod
    def _redoc_standalone():
        return reverse("api-redoc-bundle")


REDOC_BUNDLE = "drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"
REDOC_CDN_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


@functools.cache
def _redoc_bundle() -> bytes:
    """The sidecar's ReDoc bundle with its footer logo pointed at our own favicon instead of
    cdn.redoc.ly: the portal works offline, and the docs load nothing from outside."""
    text = Path(finders.find(REDOC_BUNDLE)).read_text(encoding="utf-8")
    return text.replace(REDOC_CDN_LOGO, static("favicon.svg")).encode("utf-8")


@login_required
def redoc_bundle(request):
    response = HttpResponse(_redoc_bundle(), content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "private, max-age=86400"
    return response


ENDPOINTS = [
    path("usage/", UsageView.as_view(), name="api-usage"),
    path("idle/", IdleView.as_view(), name="api-idle"),
    path("chargeback/", ChargebackView.as_view(), name="api-chargeback"),
    path("chargeback/xlsx/", ChargebackXLSXView.as_view(), name="api-chargeback-xlsx"),
    path("chargeback/focus/", FocusExportView.as_view(), name="api-chargeback-focus"),
    path("chargeback/close/", ClosePeriodView.as_view(), name="api-chargeback-close"),
    path("chargeback/reopen/", ReopenPeriodView.as_view(), name="api-chargeback-reopen"),
    path("forecast/", ForecastView.as_view(), name="api-forecast"),
    path("rates/", RateListView.as_view(), name="api-rates"),
    path("rates/<int:pk>/", RateDetailView.as_view(), name="api-rate"),
    path("quota-recommendations/", QuotaRecommendationsView.as_view(), name="api-quota-recommendations"),
    path("rightsizing/", RightsizingView.as_view(), name="api-rightsizing"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SwaggerUI.as_view(url_name="api-schema"), name="api-docs"),
    path("redoc/", ReDoc.as_view(url_name="api-schema"), name="api-redoc"),
]


class APIRoot(APIRootView):
    """The endpoints of this API, each with its absolute URL (a rate's own URL is rates/<id>/).
    The full description of each is the OpenAPI document at schema/, read in docs/ or redoc/."""


# name in the listing -> URL name. A route with a path parameter (rates/<id>/) has no URL of
# its own to list: its collection (rates/) stands for it.
ROOT = {p.name.removeprefix("api-"): p.name for p in ENDPOINTS if "<" not in str(p.pattern)}

urlpatterns = [path("", APIRoot.as_view(api_root_dict=ROOT), name="api-root"), *ENDPOINTS]
