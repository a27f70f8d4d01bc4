from django.urls import path

from .views import admin_tools, chargeback, explore, health, idle, overview, team

app_name = "reports"

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("teams/<path:name>/", team.team_dashboard, name="team"),
    path("explore/", explore.explorer, name="explore"),
    path("idle/", idle.idle, name="idle"),
    path("health/", health.health, name="health"),
    path("admin-tools/ingest/", admin_tools.ingest_log, name="ingest-log"),
    path("admin-tools/claims/", admin_tools.label_claims, name="label-claims"),
    path("admin-tools/rates/", admin_tools.rate_upload, name="rate-upload"),
    path("admin-tools/rates/imports/<int:pk>/", admin_tools.rate_import, name="rate-import"),
]

# The chargeback page, mounted at /chargeback/ under its own namespace (chargeback:statement).
chargeback_urls = ([
    path("", chargeback.statement_view, name="statement"),
    path("close/", chargeback.close_view, name="close"),
    path("reopen/", chargeback.reopen_view, name="reopen"),
], "chargeback")
