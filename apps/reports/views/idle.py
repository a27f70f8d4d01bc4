from apps.web.pages import bad_request
from apps.web.throttle import long_read_page
from apps.web.params import BadParameters

from .. import figures
from ..data.idle import (DEFAULT_SORT, SORTS, idle_pods, parse_idle_options, pod_cells, pod_order,
                         unallocated_capacity)
from ..data.paging import page_of, parse_paging, sort_rows
from ..money import load_rate_card, price_groups
from .common import page, report_view
from .listing import page_links, sort_links

# The columns the table sorts by, and the direction a first click sorts in.
FIRST_DIRECTION = {"idle_gpu_hours": "-", "gpus_held": "-", "longest_idle": "-", "utilization": "",
                   "pod": "", "namespace": "", "team": "", "cluster": ""}


@report_view(hourly=True)     # idle stretches are read from hourly rows per pod
@long_read_page
def idle(request, sel):
    try:
        opts = parse_idle_options(request.GET)
        paging = parse_paging(request.GET, SORTS, DEFAULT_SORT)
        pods = idle_pods(sel, opts)
        shown = page_of(sort_rows(pods, paging, SORTS, pod_order), paging)
    except BadParameters as exc:
        return bad_request(request, exc.detail)
    unallocated = unallocated_capacity(sel) if sel.fleet else None
    if sel.money:
        card = load_rate_card()
        pod_rows = list(zip(shown.rows, price_groups(pod_cells(sel, shown.rows), card=card)))
        unallocated_rows = (list(zip(unallocated, price_groups([u.cells for u in unallocated], unallocated=True,
                                                               card=card))) if unallocated is not None else None)
    else:
        pod_rows = [(p, None) for p in shown.rows]
        unallocated_rows = [(u, None) for u in unallocated] if unallocated is not None else None
    api_query = request.GET.copy()
    for key in ("page", "page_size", "sort"):
        api_query.pop(key, None)
    api_query["format"] = "csv"
    return page(request, sel, "reports/idle.html", "idle", {
        "pods": pods, "pod_rows": pod_rows, "shown": shown, "paging": paging, "opts": opts,
        "max_utilization_pct": opts.max_utilization * 100,
        "unallocated": unallocated_rows,
        "csv_url": "/api/v1/idle/?" + api_query.urlencode(),
        "sort_links": sort_links(request, paging, FIRST_DIRECTION), "page_links": page_links(request, shown),
        "fig_pods": figures.idle_pods_bar(pods),
    })
