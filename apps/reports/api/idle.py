"""GET /api/v1/idle/: allocated-but-idle pods ranked by idle GPU-hours."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from ..data.idle import CSV_COLUMNS, EVERY_IDLE_POD, idle_pods, parse_idle_options
from apps.web.paging import MAX_PAGE_SIZE, api_page, parse_page
from apps.accounting.query.filters import POD_HOURS, filter_from, iso_utc as iso, window_rules
from apps.web.drf import paging_fields, paging_parameters
from apps.web.throttle import long_read_api

from .usage import WINDOW_PARAMS

IDLE_ROW_FIELDS = {
    "cluster": serializers.CharField(), "namespace": serializers.CharField(), "pod": serializers.CharField(),
    "team": serializers.CharField(), "node": serializers.CharField(), "gpus_held": serializers.FloatField(),
    "idle_gpu_hours": serializers.FloatField(), "allocated_gpu_hours": serializers.FloatField(),
    "used_gpu_hours": serializers.FloatField(), "utilization": serializers.FloatField(),
    "longest_idle_hours": serializers.FloatField(),
}


API_PAGE_SIZE = MAX_PAGE_SIZE     # pods per page of the JSON answer unless page_size says


class IdleView(APIView):
    @extend_schema(
        parameters=WINDOW_PARAMS + [
            OpenApiParameter("cluster", OpenApiTypes.STR, description="cluster name"),
            OpenApiParameter("team", OpenApiTypes.STR, description="team name (team leads: one of theirs)"),
            OpenApiParameter("max_utilization", {"type": "number", "minimum": 0, "maximum": 1},
                             description="only pods whose used ÷ allocated is below this ratio "
                                         "(the Idle GPUs page uses 0.10); default: no limit"),
            OpenApiParameter("min_idle_minutes", {"type": "number", "minimum": 0},
                             description="only pods with an idle stretch at least this long "
                                         "(the page uses 30); default 0"),
        ] + paging_parameters("pods", API_PAGE_SIZE),
        responses=inline_serializer("IdleResponse", {
            "start": serializers.CharField(), "end": serializers.CharField(),
            "max_utilization": serializers.FloatField(), "min_idle_minutes": serializers.FloatField(),
            **paging_fields("pods"),
            "results": inline_serializer("IdlePod", IDLE_ROW_FIELDS, many=True),
        }),
        description="The pods with idle GPU-time in the window, ranked by idle GPU-hours (narrow it with "
                    f"max_utilization / min_idle_minutes), {API_PAGE_SIZE} a page unless page_size says: "
                    "`count` is the whole ranking's, `next` the following page's URL; ?format=csv holds every "
                    "pod." + window_rules(POD_HOURS),
    )
    @long_read_api
    def get(self, request):
        sel = filter_from(request.query_params, request.user, reads=POD_HOURS)
        opts = parse_idle_options(request.query_params, defaults=EVERY_IDLE_POD)
        export = request.accepted_renderer.format == "csv"
        # JSON a page at a time (docs/api.md, "Paging"); the CSV is an export of every pod.
        paging = None if export else parse_page(request.query_params, default_size=API_PAGE_SIZE)
        pods = idle_pods(sel, opts)
        head = {"start": iso(sel.start), "end": iso(sel.end), "max_utilization": opts.max_utilization,
                "min_idle_minutes": opts.min_idle_minutes}
        if export:
            return Response({**head, "results": [p.as_dict() for p in pods]})
        body = api_page(request, pods, paging)
        return Response({**head, **body, "results": [p.as_dict() for p in body["results"]]})

    def csv_columns(self, rows):
        if rows and isinstance(rows[0], dict) and "pod" not in rows[0]:
            return None  # an error body
        return CSV_COLUMNS
