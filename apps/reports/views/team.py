from dataclasses import replace

from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import mark_safe

from apps.accounting.calc import period_of
from apps.accounting.forecast_store import forecast_version
from apps.accounting.months import usage_version
from apps.accounting.usage import UsageFilter, billing_zone, group_cells
from apps.teams.access import require_team, sees_money_of
from apps.teams.models import UNASSIGNED, Team
from apps.teams.resolve import TeamResolver

from .. import figures
from ..fragments import digest, fragment, fragment_parts
from ..money import load_rate_card, price_groups
from ..data.team import mig_hours, money_cells, month_costs, team_forecast, namespace_moves, namespace_series, quota_use, team_cells
from ..data.overview import partial_day
from .common import page, picker_dates, report_view


@report_view
def team_dashboard(request, sel, name):
    # A team lead asking for someone else's team gets a 403 whether or not it exists.
    require_team(request.user, name)
    if name != UNASSIGNED and not Team.objects.filter(name=name).exists():
        raise Http404("no such team")
    if sel.team and sel.team != name:   # another team picked in the bar: that team's page
        query = request.GET.copy()
        query.pop("team")
        return redirect(f"{reverse('reports:team', args=[sel.team])}{'?' + query.urlencode() if query else ''}")
    # The page's figures are this team's: its money shows only when the team is in the user's
    # money scope (docs/security.md, "Money scope").
    sel = replace(sel, money=sees_money_of(request.user, {name}))
    resolver = TeamResolver()     # one read of mappings and label history for the cells, quota and moves
    picker_start, picker_end = picker_dates(sel)
    usage_html, mig_html, moves_html = _usage_parts(sel, name, resolver, picker_start, picker_end)
    quotas = quota_use(sel, name, resolver)
    costs, forecast_html = None, ""
    if sel.money:
        now = timezone.now()
        costs = month_costs(sel, name, now)
        forecast_html = _forecast_part(sel, name, now, costs, resolver)
    return page(request, sel, "reports/team.html", "team", {
        "team": name, "quotas": quotas, "costs": costs,
        "usage_html": mark_safe(usage_html), "mig_html": mark_safe(mig_html),       # our templates'
        "forecast_html": mark_safe(forecast_html), "moves_html": mark_safe(moves_html),
        "fig_quota": figures.quota_bar(quotas),
    }, picker_team=name)


USAGE_TEMPLATES = ("reports/_team_usage.html", "reports/_team_mig.html", "reports/_team_moves.html",
                   "reports/_chart.html")
FORECAST_TEMPLATES = ("reports/_team_forecast.html",)


def _usage_parts(sel, name, resolver, picker_start, picker_end) -> list[str]:
    """The window's namespaces (chart and table), MIG hours and the namespaces' moves up to its
    end; for a whole month of every cluster, a stored fragment at the version of the team's
    stored cells (the usage dates and the mapping, moves included; with money, the statement's
    too), with the partial day the chart marks (it follows the watermark, not a logged input)
    in its version."""
    f = UsageFilter(start=sel.start, end=sel.end, cluster=sel.cluster, teams=frozenset({name}))
    kept = usage_version(f, priced=sel.money, scoped=True)
    partial = partial_day(sel.usage_filter())

    def render() -> list[str]:
        cells = team_cells(sel, name, resolver)
        namespaces = group_cells(cells, "namespace")
        mig = mig_hours(cells)
        card = load_rate_card() if sel.money else None
        priced = price_groups([r.cells for r in namespaces], card=card) if sel.money else [None] * len(namespaces)
        ctx = {"sel": sel, "team": name, "picker_start": picker_start, "picker_end": picker_end,
               "namespaces": namespaces, "namespace_rows": list(zip(namespaces, priced)), "mig": mig,
               "fig_namespaces": figures.namespace_lines(namespace_series(cells), partial),
               "fig_mig": figures.mig_bar(mig), "moves": namespace_moves(sel, name, resolver)}
        return [render_to_string(template, ctx) for template in USAGE_TEMPLATES[:3]]
    period, version = kept if kept is not None else (None, None)
    return fragment_parts(period, "team-page", version and f"{version}|partial {partial!r}",
                          [("team", digest(name)), ("money", int(sel.money)), ("start", picker_start),
                           ("end", picker_end)], USAGE_TEMPLATES, render)


def _forecast_part(sel, name, now, costs, resolver) -> str:
    """The running month's forecast of the team, on the clusters the page shows (its own usage
    read, docs/forecast.md); for every cluster, a stored fragment at the stored forecast's
    version (the month's statement, the history's usage, the watermark it stands at)."""
    period = period_of(now.astimezone(billing_zone()).date())

    def render() -> str:
        forecast = team_forecast(sel, name, now, cells=money_cells(sel, name, now, resolver), costs=costs)
        return render_to_string(FORECAST_TEMPLATES[0], {"forecast": forecast})
    version = None if sel.cluster else forecast_version(period, now=now)
    return fragment(period, "team-page-forecast", version, [("team", digest(name))], FORECAST_TEMPLATES, render)
