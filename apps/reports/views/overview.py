from collections import defaultdict

from apps.accounting.usage import group_cells, usage_cells

from .. import figures
from ..data.overview import daily_totals, fleet_by_model, ingest_freshness, top_idle_teams, window_totals
from ..money import load_rate_card, price_groups
from .common import page, report_view


@report_view
def overview(request, sel):
    # Per billing day for the daily chart and each day's cost; the window, its teams and its
    # models from span cells, as the usage API and the statement read them: a month of a large
    # fleet is ten times fewer span cells than day cells (docs/performance.md, "Pages").
    f = sel.usage_filter()
    cells = usage_cells(f)
    spans = usage_cells(f, per_day=False)
    days = daily_totals(cells)
    idle_teams = top_idle_teams(spans)
    models = fleet_by_model(spans)
    freshness = ingest_freshness()
    totals = window_totals(days)
    teams = group_cells(spans, "team")
    ctx = {
        "days": days, "teams": teams, "totals": totals, "idle_teams": idle_teams, "models": models,
        "freshness": freshness, "stale": [f for f in freshness if f.stale],
        "fig_fleet": figures.fleet_area(days, sel.fleet),
        "fig_efficiency": figures.efficiency_trend(days),
        "fig_idle_teams": figures.idle_teams_bar(idle_teams),
        "fig_models": figures.models_bar(models) if sel.fleet else None,
    }
    if sel.money:
        ctx.update(_money(cells, spans, days, teams, models))
    else:
        ctx.update(total_cost=None, day_rows=[(d, None) for d in days], team_rows=[(t, None) for t in teams],
                   model_rows=[(m, None, None) for m in models])
    return page(request, sel, "reports/overview.html", "overview", ctx)


def _money(cells, spans, days, teams, models):
    """Each usage figure's cost beside it: the window, each day, each team, each GPU model."""
    by_day, by_model = defaultdict(list), defaultdict(list)
    for c in cells:
        by_day[c.day].append(c)
    for c in spans:
        by_model[c.gpu_model].append(c)
    groups = [spans] + [by_day[d.day] for d in days] + [t.cells for t in teams] + [by_model[m["gpu_model"]] for m in models]
    card = load_rate_card()
    priced = iter(price_groups(groups, card=card))
    unallocated = iter(price_groups([by_model[m["gpu_model"]] for m in models], unallocated=True, card=card))
    total = next(priced)
    return {
        "total_cost": total,
        "day_rows": [(d, next(priced)) for d in days],
        "team_rows": [(t, next(priced)) for t in teams],
        "model_rows": [(m, next(priced), next(unallocated)) for m in models],
    }
