"""A team's page: its usage, money, months, quota, forecast and advice."""
from dataclasses import replace

from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import mark_safe

from apps.accounting.stored import prefetch_versions
from apps.accounting.core.periods import period_of, prev_period
from apps.accounting.forecast.stored import forecast_version
from apps.accounting.stored import QUOTA
from apps.accounting.ledger.answer import usage_version, whole_month
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.usage.cells import UsageFilter, group_cells
from apps.accounting.ledger.as_billed import billed_card
from apps.accounting.ledger.money import OWN_USAGE, money_by, window_late
from apps.accounting.ledger.statements import statement
from apps.teams.access import require_team, sees_money_of, team_exists, team_scope

from .. import charts
from ..fragments import digest, fragment, fragment_parts
from ..money import ledger_priced, price_groups
from ..data.team import (claimed_gpu_rows, mig_hours, month_costs, team_forecast, namespace_moves, namespace_series, quota_use, shared_gpu_rows,
                         team_cells)
from ..data.overview import partial_day
from .common import page, picker_dates, report_view


@report_view
def team_dashboard(request, sel, name):
    # A team lead asking for someone else's team gets a 403 whether or not it exists.
    require_team(request.user, name)        # 404 for a made-up name when the user sees every team
    if team_scope(request.user) is not None and not team_exists(name):
        raise Http404("no such team")
    if sel.team and sel.team != name:   # another team picked in the bar: that team's page
        query = request.GET.copy()
        query.pop("team")
        return redirect(f"{reverse('reports:team', args=[sel.team])}{'?' + query.urlencode() if query else ''}")
    # The page's figures are this team's: its money shows only when the team is in the user's
    # money scope (docs/security.md, "Money scope").
    sel = replace(sel, money=sees_money_of(request.user, {name}))
    now = timezone.now()
    # The months the parts below read the versions of (the window's, this month and the last):
    # one read of the log for all of them, which each part then finds (`versions_read_once`).
    this_month = period_of(now.astimezone(billing_zone()).date())
    window = whole_month(UsageFilter(start=sel.start, end=sel.end))
    prefetch_versions({this_month, prev_period(this_month), *([window] if window else [])})
    picker_start, picker_end = picker_dates(sel)
    usage_html, mig_html, moves_html, shared_html = _usage_parts(sel, name, picker_start, picker_end)
    quota_html = _quota_part(sel, name)
    costs, forecast_html, late = None, "", []
    if sel.money:
        costs = month_costs(sel, name, now)
        forecast_html = _forecast_part(sel, name, now)
        # live: late hours follow ingest, which the stored usage part's version of a closed month does not
        late = window_late(UsageFilter(start=sel.start, end=sel.end, cluster=sel.cluster, teams=frozenset({name})))
    return page(request, sel, "reports/team.html", "team", {
        "team": name, "costs": costs, "quota_html": mark_safe(quota_html),
        "usage_html": mark_safe(usage_html), "mig_html": mark_safe(mig_html),       # our templates'
        "forecast_html": mark_safe(forecast_html), "moves_html": mark_safe(moves_html),
        "shared_html": mark_safe(shared_html), "window_late": late,
    }, picker_team=name)


USAGE_TEMPLATES = ("reports/_team_usage.html", "reports/_team_mig.html", "reports/_team_moves.html",
                   "reports/_team_shared_gpus.html", "reports/_chart.html")
FORECAST_TEMPLATES = ("reports/_team_forecast.html",)
QUOTA_TEMPLATES = ("reports/_team_quota.html", "reports/_chart.html")


def _usage_parts(sel, name, picker_start, picker_end) -> list[str]:
    """The window's namespaces (chart and table), MIG hours, the namespaces' moves up to its
    end and the GPUs they held in parts (HAMi shares, GPUs shared by pods); for a whole month
    of every cluster, a stored fragment at the version of the team's stored cells (the usage dates and the mapping, moves included; with money, the statement's
    too), with the partial day the chart marks (it follows the watermark, not a logged input)
    in its version."""
    f = UsageFilter(start=sel.start, end=sel.end, cluster=sel.cluster, teams=frozenset({name}))
    kept = usage_version(f, priced=sel.money, scoped=True)
    partial = partial_day(sel.usage_filter())

    def render() -> list[str]:
        # With money, as billed: beside a closed month's money the hours it priced (docs/chargeback.md,
        # "Windows across a close").
        cells = team_cells(sel, name, billed=sel.money)
        namespaces = group_cells(cells, "namespace")
        mig = mig_hours(cells)
        card = billed_card() if sel.money else None
        priced = price_groups([r.cells for r in namespaces], card=card) if sel.money else [None] * len(namespaces)
        rows = list(zip(namespaces, priced))
        month = whole_month(f) if sel.money and not sel.cluster else None
        if month is not None:
            rows = _ledger_rows(month, name, rows)
        ctx = {"sel": sel, "team": name, "picker_start": picker_start, "picker_end": picker_end,
               "namespaces": namespaces, "namespace_rows": rows, "mig": mig,
               "fig_namespaces": charts.namespace_lines(namespace_series(cells), partial),
               "fig_mig": charts.mig_bar(mig), "moves": namespace_moves(sel, name),
               "shared_gpus": shared_gpu_rows(sel, name, card), "claimed_gpus": claimed_gpu_rows(sel, name, card)}
        return [render_to_string(template, ctx) for template in USAGE_TEMPLATES[:4]]
    period, version = kept if kept is not None else (None, None)
    return fragment_parts(period, "team-page", version and f"{version}|partial {partial!r}",
                          [("team", digest(name)), ("money", int(sel.money)), ("start", picker_start),
                           ("end", picker_end)], USAGE_TEMPLATES, render)


def _ledger_rows(period: str, name: str, rows: list) -> list:
    """A whole month's namespace rows with the team's money as its statement splits it (rounded
    once, docs/chargeback.md "Rounding"); for a closed month the rows are its frozen days already
    (`ledger.as_billed`), so each namespace it bills has its row, with the hours it priced ("Closed
    on every view")."""
    lines = [line for line in statement(period).lines if line.team == name]
    by_ns = money_by(lines, lambda line: line.namespace, OWN_USAGE)
    return [(r, ledger_priced(p, by_ns.get(r.key))) for r, p in rows]


def _forecast_part(sel, name, now) -> str:
    """The running month's forecast of the team: its rows of the fleet's stored forecast (with a
    cluster picked, computed for that cluster: docs/forecast.md); for every cluster, a stored
    fragment at the stored forecast's version (the month's statement, the history's usage, the
    watermark it stands at)."""
    period = period_of(now.astimezone(billing_zone()).date())

    def render() -> str:
        forecast = team_forecast(sel, name, now)
        return render_to_string(FORECAST_TEMPLATES[0], {"forecast": forecast})
    version = None if sel.cluster else forecast_version(period, now=now)
    return fragment(period, "team-page-forecast", version, [("team", digest(name))], FORECAST_TEMPLATES, render)


def _quota_part(sel, name) -> str:
    """The team's GPU quotas against their use over the window; for a whole month of every
    cluster, a stored fragment at the version of the month's cells (the team mapping) and of the
    quota hours' log (`quota`)."""
    f = UsageFilter(start=sel.start, end=sel.end, cluster=sel.cluster, teams=frozenset({name}))
    kept = usage_version(f, priced=False, scoped=True, also=(QUOTA,))

    def render() -> str:
        quotas = quota_use(sel, name)
        return render_to_string(QUOTA_TEMPLATES[0], {"quotas": quotas, "fig_quota": charts.quota_bar(quotas)})
    period, version = kept if kept is not None else (None, None)
    return fragment(period, "team-page-quota", version, [("team", digest(name))], QUOTA_TEMPLATES, render)
