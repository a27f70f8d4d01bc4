from dataclasses import replace

from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone

from apps.accounting.usage import group_cells
from apps.teams.access import require_team, sees_money_of
from apps.teams.models import UNASSIGNED, Team
from apps.teams.resolve import TeamResolver

from .. import figures
from ..money import load_rate_card, price_groups
from ..data.team import mig_hours, money_cells, month_costs, team_forecast, namespace_moves, namespace_series, quota_use, team_cells
from ..data.overview import partial_day
from .common import page, report_view


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
    cells = team_cells(sel, name, resolver)
    namespaces = group_cells(cells, "namespace")
    series = namespace_series(cells)
    mig = mig_hours(cells)
    quotas = quota_use(sel, name, resolver)
    card = load_rate_card() if sel.money else None
    costs = forecast = None
    if sel.money:
        now = timezone.now()
        money = money_cells(sel, name, now, resolver)
        costs = month_costs(sel, name, now, card=card, cells=money)
        forecast = team_forecast(sel, name, now, card=card, cells=money, costs=costs)
    priced = price_groups([r.cells for r in namespaces], card=card) if sel.money else [None] * len(namespaces)
    return page(request, sel, "reports/team.html", "team", {
        "team": name, "namespaces": namespaces, "namespace_rows": list(zip(namespaces, priced)), "mig": mig, "quotas": quotas, "costs": costs, "forecast": forecast,
        "moves": namespace_moves(sel, name, resolver),
        "fig_namespaces": figures.namespace_lines(series, partial_day(sel.usage_filter())),
        "fig_mig": figures.mig_bar(mig),
        "fig_quota": figures.quota_bar(quotas),
    }, picker_team=name)
