"""The overview page: the fleet's allocated, used and idle GPU-hours, money and freshness for a window."""
from collections import defaultdict

from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from apps.accounting.ledger.money import OWN_USAGE, closed_money_by_day, money_by, window_late
from apps.accounting.ledger.statements import statement
from apps.accounting.ledger.answer import whole_month
from apps.accounting.ledger.as_billed import billed_card, billed_cells, crosses_a_close
from apps.accounting.usage.cells import UNASSIGNED, group_cells, usage_cells

from .. import charts
from ..data.overview import daily_totals, partial_day, fleet_by_model, ingest_freshness, top_idle_teams, window_totals
from ..data.overview_store import kept_html
from ..money import frozen_day, ledger_priced, price_groups, split_to_total
from .common import page, report_view


@report_view
def overview(request, sel):
    f = sel.usage_filter()

    # The figures' links carry the picker in its one canonical spelling, so the stored HTML is
    # keyed by the window as parsed, never by how the URL spelled it (docs/security.md).
    qs = sel.canonical_querystring

    def render(data) -> str:
        return render_to_string("reports/_overview_figures.html", {
            **data, "totals": window_totals(data["days"]), "sel": sel, "qs": qs})

    figures_html = kept_html(f, sel.money, sel.fleet, qs, lambda: _figures(f, sel.money, sel.fleet), render)
    freshness = ingest_freshness()     # always live
    # Live too: late hours follow ingest into a closed month and a later month's close, which the
    # stored figures' version does not (docs/chargeback.md, "Windows across a close").
    late = window_late(f) if sel.money else []
    ctx = {"figures_html": mark_safe(figures_html), "freshness": freshness,   # rendered by our template
           "stale": [x for x in freshness if x.stale], "window_late": late}
    return page(request, sel, "reports/overview.html", "overview", ctx)


def _figures(f, money: bool, fleet: bool) -> dict:
    """The window's figures: per billing day for the daily chart and each day's cost; the
    window, its teams and its models from span cells, as the usage API and the statement read
    them (a month of a large fleet is ten times fewer span cells than day cells). A whole month
    of the whole fleet is kept as a stored answer (`overview_store`, docs/performance.md)."""
    # With money, the window as billed: a closed month's days as its close froze them, so the hours
    # beside its money are those it priced (docs/chargeback.md, "Windows across a close").
    # Across a close the day cells serve as spans too (a closed day is a day cell either way): the
    # frozen days are read once.
    cells = billed_cells(f) if money else usage_cells(f)
    spans = (cells if crosses_a_close(f) else usage_cells(f, per_day=False)) if money else usage_cells(f, per_day=False)
    days = daily_totals(cells)
    teams = group_cells(spans, "team")
    models = fleet_by_model(spans)
    idle_teams = top_idle_teams(spans)
    partial = partial_day(f)
    data = {"days": days, "teams": teams, "idle_teams": idle_teams, "models": models,
            "fig_fleet": charts.fleet_area(days, fleet, partial),
            "fig_efficiency": charts.efficiency_trend(days, partial),
            "fig_idle_teams": charts.idle_teams_bar(idle_teams),
            "fig_models": charts.models_bar(models) if fleet else None}
    if money:
        data.update(_money(cells, spans, days, teams, models))
        _from_ledger(f, data)
        # Each table beside the Cost KPI is split from it, so its rows add up to it.
        total = data["total_cost"]
        data["day_rows"] = list(zip(days, split_to_total(total, [p for _d, p in data["day_rows"]])))
        data["team_rows"] = list(zip([t for t, _p in data["team_rows"]],
                                     split_to_total(total, [p for _t, p in data["team_rows"]])))
        data["model_rows"] = [(m, p, u) for (m, _p, u), p in
                              zip(data["model_rows"], split_to_total(total, [p for _m, p, _u in data["model_rows"]]))]
    else:
        data.update(total_cost=None, day_rows=[(d, None) for d in days], team_rows=[(t, None) for t in teams],
                    model_rows=[(m, None, None) for m in models])
    return data


def _money(cells, spans, days, teams, models):
    """Each usage figure's cost beside it: the window, each day, each team, each GPU model."""
    by_day, by_model = defaultdict(list), defaultdict(list)
    for c in cells:
        by_day[c.day].append(c)
    for c in spans:
        by_model[c.gpu_model].append(c)
    groups = [spans] + [by_day[d.day] for d in days] + [t.cells for t in teams] + [by_model[m["gpu_model"]] for m in models]
    card = billed_card()        # a closed month's days at the card it was closed with
    priced = iter(price_groups(groups, card=card))
    unallocated = iter(price_groups([by_model[m["gpu_model"]] for m in models], unallocated=True, card=card))
    total = next(priced)
    # each breakdown is split from the Cost KPI afterwards (`split_to_total`, in `_figures`)
    day_priced = [next(priced) for _ in days]
    team_priced = [next(priced) for _ in teams]
    model_priced = [next(priced) for _ in models]
    return {
        "total_cost": total,
        "day_rows": list(zip(days, day_priced)),
        "team_rows": list(zip(teams, team_priced)),
        "model_rows": [(m, p, next(unallocated)) for m, p in zip(models, model_priced)],
    }


def _from_ledger(f, data) -> None:
    """A whole billing month of every cluster: the window's and each team's cost are the month's
    ledger's (its statement, a closed month's frozen one; docs/chargeback.md, "One month, one
    answer"), so the overview says what the chargeback page says; so are each GPU model's usage
    and unallocated cost. A closed month's rows are its frozen days already (`ledger.as_billed`), and
    its days' money is its frozen statement's split over them; an open month's days are priced
    from their own hours."""
    period = whole_month(f)
    if period is None or f.cluster or f.namespaces is not None or f.gpu_models is not None:
        return
    lines = [line for line in statement(period).lines if f.teams is None or line.team in f.teams]
    by_team = money_by(lines, lambda line: line.team or UNASSIGNED, OWN_USAGE)
    total = money_by(lines, lambda line: "", OWN_USAGE).get("")

    by_model = money_by(lines, lambda line: line.gpu_model, OWN_USAGE)
    idle_by_model = money_by(lines, lambda line: line.gpu_model, ("unallocated",))
    data["total_cost"] = ledger_priced(data["total_cost"], total)
    data["team_rows"] = [(t, ledger_priced(p, by_team.get(t.key))) for t, p in data["team_rows"]]
    data["model_rows"] = [(m, ledger_priced(p, by_model.get(m["gpu_model"])),
                           ledger_priced(u, idle_by_model.get(m["gpu_model"]))) for m, p, u in data["model_rows"]]
    by_day = closed_money_by_day(period, f.teams)
    if by_day is not None:
        data["day_rows"] = [(d, frozen_day(p, by_day.get(d.day))) for d, p in data["day_rows"]]
