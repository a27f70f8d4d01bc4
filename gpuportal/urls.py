from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.http import HttpResponsePermanentRedirect

from apps.reports.urls import chargeback_urls
from gpuportal import api, health, metrics

def favicon(request):
    # resolved per request: the static file's hashed name exists only after collectstatic
    return HttpResponsePermanentRedirect(static("favicon.svg"))


urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("livez", health.livez, name="livez"),
    # Browsers ask for /favicon.ico on pages that name no icon (the API docs): the portal's icon.
    path("favicon.ico", favicon),
    path("metrics", metrics.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("gpuportal.api")),
    # ReDoc's bundle as the docs page loads it (outside /api/v1/: an asset, not an operation)
    path("api-docs-assets/redoc.standalone.js", api.redoc_bundle, name="api-redoc-bundle"),
    path("accounts/login/", auth_views.LoginView.as_view(extra_context={"oidc_enabled": settings.OIDC_ENABLED}), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("advice/", include("apps.recommendations.urls")),
    path("chargeback/", include(chargeback_urls)),
    path("", include("apps.teams.urls")),         # the user's API tokens
    path("", include("apps.reports.urls")),
]

if settings.OIDC_ENABLED:
    urlpatterns.insert(0, path("oidc/", include("mozilla_django_oidc.urls")))

handler400 = "gpuportal.errors.bad_request"
handler403 = "gpuportal.errors.permission_denied"
handler404 = "gpuportal.errors.not_found"
handler500 = "gpuportal.errors.server_error"
