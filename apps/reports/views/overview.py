from apps.accounting.usage import group_cells, usage_cells

from .. import figures
from ..data.overview import daily_totals, fleet_by_model, ingest_freshness, top_idle_teams, window_totals
from .common import page, report_view


@report_view
def overview(request, sel):
    cells = usage_cells(sel.usage_filter())
    days = daily_totals(cells)
    idle_teams = top_idle_teams(cells)
    models = fleet_by_model(cells)
    freshness = ingest_freshness()
    totals = window_totals(days)
    return page(request, sel, "reports/overview.html", "overview", {
        "days": days, "teams": group_cells(cells, "team"), "totals": totals, "idle_teams": idle_teams, "models": models,
        "freshness": freshness, "stale": [f for f in freshness if f.stale],
        "fig_fleet": figures.fleet_area(days, sel.fleet),
        "fig_efficiency": figures.efficiency_trend(days),
        "fig_idle_teams": figures.idle_teams_bar(idle_teams),
        "fig_models": figures.models_bar(models) if sel.fleet else None,
    })
