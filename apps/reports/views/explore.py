from rest_framework.exceptions import ValidationError

from apps.accounting.calc import present
from apps.clusters.models import Device
from apps.web.csv import rows_to_csv
from apps.web.pages import bad_request

from .. import figures
from ..data.explore import CSV_COLUMNS, GRAINS, MONEY_COLUMNS, explore, parse_options
from ..money import price_groups
from .common import csv_response, page, report_view


@report_view
def explorer(request, sel):
    try:
        opts = parse_options(request.GET, sel)
    except ValidationError as exc:
        return bad_request(request, exc.detail)
    result = explore(sel, opts)
    priced = price_groups([r.cells for r in result.rows]) if sel.money else [None] * len(result.rows)
    if request.GET.get("format") == "csv":
        rows = [r.as_dict() | (_money_columns(p) if sel.money else {}) for r, p in zip(result.rows, priced)]
        return csv_response(rows_to_csv(rows, CSV_COLUMNS + (MONEY_COLUMNS if sel.money else [])), "utilization.csv")
    csv_query = request.GET.copy()
    csv_query["format"] = "csv"
    return page(request, sel, "reports/explore.html", "explore", {
        "rows": list(zip(result.rows, priced)), "opts": opts, "grains": GRAINS, "csv_url": "?" + csv_query.urlencode(),
        "gpu_models": sorted(set(Device.objects.exclude(model_name="").values_list("model_name", flat=True))),
        "fig_heatmap": figures.efficiency_heatmap(result.heatmap),
    })


def _money_columns(p) -> dict:
    """The CSV's money: in the currency's minor unit, as the chargeback CSV gives it; empty when unpriced."""
    return {"cost": present(p.cost, p.currency), "idle_cost": present(p.idle_cost, p.currency), "currency": p.currency}
