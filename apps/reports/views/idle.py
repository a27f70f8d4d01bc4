from rest_framework.exceptions import ValidationError

from apps.web.pages import bad_request

from .. import figures
from ..data.idle import idle_pods, parse_idle_options, unallocated_capacity
from .common import page, report_view


@report_view
def idle(request, sel):
    try:
        opts = parse_idle_options(request.GET)
    except ValidationError as exc:
        return bad_request(request, exc.detail)
    pods = idle_pods(sel, opts)
    api_query = request.GET.copy()
    api_query["format"] = "csv"
    return page(request, sel, "reports/idle.html", "idle", {
        "pods": pods, "opts": opts, "max_utilization_pct": opts.max_utilization * 100,
        "unallocated": unallocated_capacity(sel) if sel.fleet else None,
        "csv_url": "/api/v1/idle/?" + api_query.urlencode(),
        "fig_pods": figures.idle_pods_bar(pods),
    })
