"""GET /api/v1/rightsizing/: one row per workload and GPU kind, the largest saving first
(docs/advice-and-alerts.md, "Right-sizing")."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounting.query.filters import WORKLOAD_HOURS, filter_from, iso_utc, window_rules

from apps.recommendations.api import HOURLY_WINDOW_DAYS_SCHEMA
from apps.web.drf import paging_fields, paging_parameters
from apps.web.paging import MAX_PAGE_SIZE, api_page, parse_page
from apps.web.throttle import long_read_api
from apps.recommendations.rightsizing.rules import ACTIONS
from apps.recommendations.rightsizing.rows import CSV_COLUMNS, RightsizeQuery, measured_window, public, rightsizing_rows, total_saving, window_said

_money = dict(allow_null=True)
API_PAGE_SIZE = MAX_PAGE_SIZE     # workloads per page of the JSON answer unless page_size says
ROW_FIELDS = {
    "cluster": serializers.CharField(), "namespace": serializers.CharField(), "team": serializers.CharField(),
    "workload_kind": serializers.CharField(help_text="the pod's owner: Deployment, StatefulSet, Job, CronJob, "
                                                     "Notebook…, or Pod when it has none"),
    "workload_name": serializers.CharField(), "pods": serializers.IntegerField(),
    "gpu_model": serializers.CharField(), "mig_profile": serializers.CharField(help_text="\"\" for a whole GPU"),
    "resource_now": serializers.CharField(help_text="e.g. nvidia.com/gpu"),
    "hours_observed": serializers.IntegerField(help_text="hours in which it held a GPU: the confidence"),
    "history_hours": serializers.FloatField(help_text="from its first hour in the window to the window's end"),
    "allocated_gpu_hours": serializers.FloatField(), "instance_hours": serializers.FloatField(),
    "activity": serializers.FloatField(allow_null=True), "activity_p95": serializers.FloatField(allow_null=True),
    "fb_peak_mib": serializers.FloatField(allow_null=True), "fb_p95_mib": serializers.FloatField(allow_null=True),
    "action": serializers.ChoiceField(choices=list(ACTIONS)), "action_text": serializers.CharField(),
    "profile": serializers.CharField(allow_null=True, help_text="the MIG profile advised"),
    "resource_advised": serializers.CharField(allow_null=True, help_text="e.g. nvidia.com/mig-1g.10gb"),
    "hami_gpucores": serializers.IntegerField(allow_null=True, help_text="the HAMi share that fits, advised or "
                                              "offered beside a MIG slice: nvidia.com/gpucores (percent)"),
    "hami_gpumem_mib": serializers.IntegerField(allow_null=True, help_text="… and its nvidia.com/gpumem (MiB)"),
    "reason": serializers.CharField(), "confidence": serializers.ChoiceField(choices=["low", "medium", "high"]),
    "monthly_cost_now": serializers.CharField(**_money), "monthly_cost_advised": serializers.CharField(**_money),
    "monthly_saving": serializers.CharField(
        **_money, help_text="(rate now − rate advised) × instance-hours held in the window × 730 ÷ the window's "
                            "hours when it is longer than 730, else the window's own saving; null when unpriced "
                            "or for roles without money"),
    "currency": serializers.CharField(allow_null=True), "window_start": serializers.CharField(),
    "window_end": serializers.CharField(), "yaml": serializers.CharField(help_text="the change to apply"),
    "in_totals": serializers.BooleanField(help_text="false for a workload held a GPU under a day: shown apart, "
                                                    "left out of the headline"),
}


class RightsizingView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("cluster", OpenApiTypes.STR, description="cluster name; default all clusters"),
            OpenApiParameter("window_days", HOURLY_WINDOW_DAYS_SCHEMA,
                             description=f"trailing window in days, 1 to {HOURLY_WINDOW_DAYS_SCHEMA['maximum']} "
                                         "(MAX_RIGHTSIZING_DAYS: right-sizing reads every hourly row of each workload); "
                                         "default 28"),
            OpenApiParameter("team", OpenApiTypes.STR, description="one team's workloads only"),
            OpenApiParameter("start", OpenApiTypes.STR, description="instead of window_days (which is then not "
                                                                    "read): the window's start, as a team page's"),
            OpenApiParameter("end", OpenApiTypes.STR, description="the window's end (not included), cut at the "
                                                                  "hours ingested"),
        ] + paging_parameters("workloads", API_PAGE_SIZE),
        responses=inline_serializer("Rightsizing", {
            "cluster": serializers.CharField(allow_null=True), "team": serializers.CharField(allow_null=True),
            "window_start": serializers.CharField(allow_null=True, help_text="what the rows measure: the earliest "
                                                                             "cluster window's start"),
            "window_end": serializers.CharField(allow_null=True, help_text="the latest cluster window's end (its "
                                                                           "ingest watermark)"),
            "window": serializers.CharField(help_text="the same window in words, as the pages say it"),
            "monthly_saving": inline_serializer("RightsizingTotal", {
                "amount": serializers.CharField(), "currency": serializers.CharField()}, many=True,
                help_text="the headline: workloads held a GPU under a day (in_totals false) are left out"),
            "left_out": inline_serializer("RightsizingLeftOut", {
                "workloads": serializers.IntegerField(),
                "monthly_saving": inline_serializer("RightsizingLeftOutTotal", {
                    "amount": serializers.CharField(), "currency": serializers.CharField()}, many=True)}),
            **paging_fields("workloads"),
            "results": inline_serializer("RightsizingRow", ROW_FIELDS, many=True),
        }),
        description="Right-sizing per workload: a smaller MIG slice, a time-sliced share, or release, with the "
                    "money it saves per month and the resource change in YAML; the largest saving first, "
                    f"{API_PAGE_SIZE} a page unless page_size says (`count` is the whole ranking's, `next` the "
                    "following page's URL; the totals are the whole ranking's); ?format=csv holds every workload."
                    + window_rules(WORKLOAD_HOURS),
    )
    @long_read_api
    def get(self, request):
        sel = filter_from(request.query_params, request.user, trailing=True, dates_too=True, reads=WORKLOAD_HOURS)
        export = getattr(request.accepted_renderer, "format", "") == "csv"
        # JSON a page at a time (docs/api.md, "Paging"); the CSV is an export of every workload.
        paging = None if export else parse_page(request.query_params, default_size=API_PAGE_SIZE)
        q = RightsizeQuery.of(sel)
        rows = rightsizing_rows(q)
        window = measured_window(q)

        def said(totals):
            return [{"amount": str(a), "currency": c} for a, c in totals] if q.money else []
        head = {"cluster": q.cluster, "team": q.team,
                "window_start": iso_utc(window[0]) if window else None,
                "window_end": iso_utc(window[1]) if window else None, "window": window_said(q),
                "monthly_saving": said(total_saving(rows)),
                "left_out": {"workloads": sum(1 for r in rows if not r["in_totals"]),
                             "monthly_saving": said(total_saving(rows, low_confidence=True))}}
        if not export:
            body = api_page(request, rows, paging)
            return Response({**head, **body, "results": [public(r) for r in body["results"]]})
        response = Response({**head, "results": [public(r) for r in rows]})
        # named after what it holds
        response["Content-Disposition"] = f'attachment; filename="{sel.download_name("rightsizing", "csv")}"'
        return response

    def csv_columns(self, rows):
        if rows and isinstance(rows[0], dict) and "workload_name" not in rows[0]:
            return None  # an error body
        return CSV_COLUMNS
