from rest_framework.exceptions import ValidationError

from apps.web.pages import bad_request

from .. import figures
from ..data.idle import (DEFAULT_SORT, SORTS, idle_pods, parse_idle_options, pod_cells, pod_order,
                         unallocated_capacity)
from ..data.paging import page_of, parse_paging, sort_rows
from ..money import load_rate_card, price_groups
from .common import page, report_view

# The columns the table sorts by, and the direction a first click sorts in.
FIRST_DIRECTION = {"idle_gpu_hours": "-", "gpus_held": "-", "longest_idle": "-", "utilization": "",
                   "pod": "", "namespace": "", "team": "", "cluster": ""}


@report_view
def idle(request, sel):
    try:
        opts = parse_idle_options(request.GET)
        paging = parse_paging(request.GET, SORTS, DEFAULT_SORT)
        pods = idle_pods(sel, opts)
        shown = page_of(sort_rows(pods, paging, SORTS, pod_order), paging)
    except ValidationError as exc:
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
        "sort_links": _sort_links(request, paging), "page_links": _page_links(request, shown),
        "fig_pods": figures.idle_pods_bar(pods),
    })


def _link(request, **changes) -> str:
    """This page's URL with `changes`, keeping every filter."""
    q = request.GET.copy()
    for key, value in changes.items():
        q.pop(key, None)
        if value is not None:
            q[key] = str(value)
    return "?" + q.urlencode()


def _sort_links(request, paging) -> dict:
    """column -> (href, arrow): a click sorts by the column, a second reverses it; back to page 1."""
    out = {}
    for key, first in FIRST_DIRECTION.items():
        if paging.key == key:
            sort, arrow = (key if paging.descending else f"-{key}"), ("▼" if paging.descending else "▲")
        else:
            sort, arrow = f"{first}{key}", ""
        out[key] = (_link(request, sort=sort, page=None), arrow)
    return out


def _page_links(request, shown) -> dict:
    return {
        "previous": _link(request, page=shown.number - 1) if shown.number > 1 else None,
        "next": _link(request, page=shown.number + 1) if shown.number < shown.pages else None,
        "first": _link(request, page=None) if shown.number > 1 else None,
        "last": _link(request, page=shown.pages) if shown.number < shown.pages else None,
    }
