from rest_framework.exceptions import ValidationError

from apps.clusters.models import Device
from apps.web.csv import rows_to_csv
from apps.web.pages import bad_request

from .. import figures
from ..data.explore import CSV_COLUMNS, GRAINS, explore, parse_options
from .common import csv_response, page, report_view


@report_view
def explorer(request, sel):
    try:
        opts = parse_options(request.GET, sel)
    except ValidationError as exc:
        return bad_request(request, exc.detail)
    result = explore(sel, opts)
    if request.GET.get("format") == "csv":
        return csv_response(rows_to_csv([r.as_dict() for r in result.rows], CSV_COLUMNS), "utilization.csv")
    csv_query = request.GET.copy()
    csv_query["format"] = "csv"
    return page(request, sel, "reports/explore.html", "explore", {
        "rows": result.rows, "opts": opts, "grains": GRAINS, "csv_url": "?" + csv_query.urlencode(),
        "gpu_models": sorted(set(Device.objects.exclude(model_name="").values_list("model_name", flat=True))),
        "fig_heatmap": figures.efficiency_heatmap(result.heatmap),
    })
