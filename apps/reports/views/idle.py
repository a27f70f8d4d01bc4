"""The Idle GPUs page: who held GPUs without using them, for how long and at what cost."""
from apps.web.csv import streaming_csv
from apps.web.pages import bad_request
from apps.web.throttle import long_read_page
from apps.web.params import BadParameters

from .. import charts
from apps.accounting.query.filters import POD_HOURS
from ..data.idle import (CSV_COLUMNS, DEFAULT_SORT, MONEY_COLUMNS, SORTS, idle_pods, parse_idle_options, pod_cells, pod_order,
                         unallocated_capacity)
from apps.web.paging import page_of, parse_paging, sort_rows
from ..money import load_rate_card, money_columns, price_groups
from .common import page, report_view
from apps.web.links import page_links, sort_links

# The columns the table sorts by, and the direction a first click sorts in.
FIRST_DIRECTION = {"idle_gpu_hours": "-", "gpus_held": "-", "longest_idle": "-", "utilization": "",
                   "pod": "", "namespace": "", "team": "", "cluster": ""}


@report_view(reads=POD_HOURS)     # idle stretches are read from hourly rows per pod
@long_read_page
def idle(request, sel):
    try:
        opts = parse_idle_options(request.GET)
        paging = parse_paging(request.GET, SORTS, DEFAULT_SORT)
        pods = idle_pods(sel, opts)
        ordered = sort_rows(pods, paging, SORTS, pod_order)
        if request.GET.get("format") == "csv":
            return _csv(sel, ordered)
        shown = page_of(ordered, paging)
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
    return page(request, sel, "reports/idle.html", "idle", {
        "pods": pods, "pod_rows": pod_rows, "shown": shown, "paging": paging, "opts": opts,
        "max_utilization_pct": opts.max_utilization * 100,
        "unallocated": unallocated_rows,
        # the page's own list as a file: its window, filters and order, every page of it
        "csv_url": sel.download_url(request.path, max_utilization=opts.max_utilization,
                                    min_idle_minutes=opts.min_idle_minutes, sort=paging.sort),
        "sort_links": sort_links(request, paging, FIRST_DIRECTION), "page_links": page_links(request, shown),
        "fig_pods": charts.idle_pods_bar(pods),
    })


def _csv(sel, pods):
    """Every pod the page lists (all its pages, in its order), with the page's columns: for roles
    that see money, each pod's cost and idle cost as the page shows them (docs/pages.md, "Downloads")."""
    priced = price_groups(pod_cells(sel, pods), card=load_rate_card()) if sel.money else [None] * len(pods)
    rows = (p.as_dict() | (money_columns(c) if sel.money else {}) for p, c in zip(pods, priced))
    return streaming_csv(rows, CSV_COLUMNS + (MONEY_COLUMNS if sel.money else []), sel.download_name("idle-gpus", "csv"))
