"""GET /api/v1/quota-recommendations/: one row per namespace, plus ClusterQueue rows."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounting.query.filters import MAX_WINDOW_DAYS, MIN_WINDOW_DAYS, WORKLOAD_HOURS, filter_from, max_window_days

from .advice import CSV_COLUMNS, AdviceQuery, advice_rows, params_from_settings

# The OpenAPI parameter of both advice endpoints (docs/api.md): its bounds are the parser's.
WINDOW_DAYS_SCHEMA = {"type": "integer", "minimum": MIN_WINDOW_DAYS, "maximum": MAX_WINDOW_DAYS}
# Right-sizing reads every hourly row of each workload: its window's limit is MAX_RIGHTSIZING_DAYS.
HOURLY_WINDOW_DAYS_SCHEMA = {"type": "integer", "minimum": MIN_WINDOW_DAYS, "maximum": max_window_days(WORKLOAD_HOURS)}

RESOURCE_FIELDS = {
    "resource": serializers.CharField(), "hard": serializers.FloatField(allow_null=True),
    "used": serializers.FloatField(allow_null=True),
    "used_peak": serializers.FloatField(allow_null=True, help_text="the most GPUs (or MIG instances) counted "
                                        "against the quota in any hour of the window; null without a quota"),
    "p50": serializers.FloatField(),
    "p90": serializers.FloatField(), "p95": serializers.FloatField(), "target": serializers.IntegerField(),
    "lower_bound": serializers.FloatField(), "upper_bound": serializers.FloatField(),
    "recommended": serializers.IntegerField(), "previous_target": serializers.IntegerField(allow_null=True),
    "efficiency": serializers.FloatField(allow_null=True), "at_hard_share": serializers.FloatField(allow_null=True),
    "queued_gpu_hours": serializers.FloatField(), "verdict": serializers.CharField(),
    "verdict_text": serializers.CharField(help_text="the verdict in words"),
    "advice_text": serializers.CharField(help_text="the verdict with the quota to apply, as the page says it"),
    "reason": serializers.CharField(), "monthly_money_at_stake": serializers.CharField(allow_null=True),
    "monthly_money_freed": serializers.CharField(
        allow_null=True, help_text="(hard − recommended) × 730 h × rate: positive frees money, negative costs "
                                   "more; null without a quota, a rate, or for roles without money"),
    "currency": serializers.CharField(allow_null=True),
}
ROW_FIELDS = {
    "kind": serializers.ChoiceField(choices=["namespace", "cluster_queue"]), "cluster": serializers.CharField(),
    "name": serializers.CharField(), "namespace": serializers.CharField(), "cluster_queue": serializers.CharField(),
    "team": serializers.CharField(), "window_start": serializers.CharField(), "window_end": serializers.CharField(),
    "history_days": serializers.FloatField(), **{k: v for k, v in RESOURCE_FIELDS.items() if k not in ("at_hard_share", "advice_text")},
    "resources": inline_serializer("QuotaRecommendationResource", RESOURCE_FIELDS, many=True),
    "yaml": serializers.CharField(),
}


class QuotaRecommendationsView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("cluster", OpenApiTypes.STR, description="cluster name; default all clusters"),
            OpenApiParameter("team", OpenApiTypes.STR, description="one team only (team leads: one of theirs, "
                             "else 403)"),
            OpenApiParameter("window_days", WINDOW_DAYS_SCHEMA,
                             description="trailing window in days, 1 to 366; default 28"),
        ],
        responses=inline_serializer("QuotaRecommendations", {
            "cluster": serializers.CharField(allow_null=True), "window_days": serializers.IntegerField(),
            "results": inline_serializer("QuotaRecommendationRow", ROW_FIELDS, many=True),
        }),
        description="Quota advice per namespace (ResourceQuota) and per Kueue ClusterQueue, worst verdict first.",
    )
    def get(self, request):
        sel = filter_from(request.query_params, request.user, trailing=True)
        q = AdviceQuery.of(sel)
        rows = advice_rows(q)
        response = Response({"cluster": q.cluster, "window_days": params_from_settings(q.window_days).window_days,
                             "results": rows})
        if getattr(request.accepted_renderer, "format", "") == "csv":    # named after what it holds
            response["Content-Disposition"] = f'attachment; filename="{sel.download_name("quota-advice", "csv")}"'
        return response

    def csv_columns(self, rows):
        if rows and isinstance(rows[0], dict) and "kind" not in rows[0]:
            return None  # an error body
        return CSV_COLUMNS
