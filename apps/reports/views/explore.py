"""The explorer page: usage over a window at the grain asked for, paged, and its CSV."""
from apps.accounting.ledger.as_billed import billed_card
from apps.clusters.models import Device
from apps.web.csv import streaming_csv
from apps.web.pages import bad_request
from apps.web.params import BadParameters

from .. import charts
from ..data.explore import (CSV_COLUMNS, DEFAULT_SORT, GRAINS, MONEY_COLUMNS, MONEY_SORTS, SORTS, explore,
                            parse_options, row_order)
from apps.web.paging import page_of, parse_paging, sort_rows
from ..money import money_columns, price_groups, shown_to_total
from .common import page, report_view
from apps.web.links import page_links, sort_links

# The direction a first click on a column sorts in.
FIRST_DIRECTION = {"period": "", "team": "", "namespace": "", "allocated_gpu_hours": "-", "idle_gpu_hours": "-",
                   "efficiency": ""}
MONEY_FIRST_DIRECTION = {"cost": "-", "idle_cost": "-"}


@report_view
def explorer(request, sel):
    csv = request.GET.get("format") == "csv"
    sorts = SORTS | (MONEY_SORTS if sel.money else {})
    try:
        opts = parse_options(request.GET, sel)
        paging = parse_paging(request.GET, sorts, DEFAULT_SORT)
    except BadParameters as exc:
        return bad_request(request, exc.detail)
    result = explore(sel, opts)
    if csv:
        priced = [None] * len(result.rows)
        if sel.money:
            # one exact amount per currency split over the teams, then over each team's rows, so the
            # file's sums are the pages' figures to the cent (docs/pages.md, "Downloads"); closed
            # months' hours at the rates they were billed at
            priced = shown_to_total(price_groups([r.cells for r in result.rows], card=billed_card()),
                                    lambda i: result.rows[i].team)
        # Streamed: each row's dict and text exist only while it is written (docs/performance.md).
        rows = (r.as_dict() | (money_columns(p) if sel.money else {}) for r, p in zip(result.rows, priced))
        return streaming_csv(rows, CSV_COLUMNS + (MONEY_COLUMNS if sel.money else []),
                             sel.download_name("utilization", "csv"))
    as_downloaded = None
    if sel.money and (paging.key in MONEY_SORTS or len(result.rows) <= paging.page_size):
        # sorted by cost, or every row on one page: every row priced first, and shown as the
        # download splits them, so a row reads the same on the page and in the file
        exact = price_groups([r.cells for r in result.rows], card=billed_card())
        for r, p in zip(result.rows, exact):
            r.priced = p
        as_downloaded = dict(zip(map(id, result.rows), shown_to_total(exact, lambda i: result.rows[i].team)))
    try:
        shown = page_of(sort_rows(result.rows, paging, sorts, row_order), paging)
    except BadParameters as exc:
        return bad_request(request, exc.detail)
    # Otherwise only the rows on the page are priced: the page costs what it shows, not the whole window.
    if as_downloaded is not None:
        priced = [as_downloaded[id(r)] for r in shown.rows]
    else:
        priced = price_groups([r.cells for r in shown.rows], card=billed_card()) if sel.money else [None] * len(shown.rows)
    return page(request, sel, "reports/explore.html", "explore", {
        "rows": list(zip(shown.rows, priced)), "shown": shown, "paging": paging, "opts": opts, "grains": GRAINS,
        "csv_url": sel.download_url(request.path, namespace=opts.namespace, gpu_model=opts.gpu_model,
                                    grain=opts.grain),
        "sort_links": sort_links(request, paging, FIRST_DIRECTION | (MONEY_FIRST_DIRECTION if sel.money else {})), "page_links": page_links(request, shown),
        "gpu_models": sorted(set(Device.objects.exclude(model_name="").values_list("model_name", flat=True))),
        "fig_heatmap": charts.efficiency_heatmap(result.heatmap),
    })
