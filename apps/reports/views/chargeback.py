"""The chargeback page: a month's statement per team, drill-down to lines, close with confirmation."""
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.accounting.actions.audit import ActionError, NotAllowed
from apps.accounting.actions.periods import before_history, check_may_close, check_may_reopen, do_close_period, do_reopen_period, may_close
from apps.accounting.stored import computed_here
from apps.accounting.stored import scope_tag
from apps.accounting.core.periods import next_period, period_bounds, prev_period
from apps.accounting.query.filters import parse_choice, parse_period_param
from apps.accounting.ledger.money import late_hours
from apps.accounting.signals import history_starts
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.models.periods import BillingPeriod
from apps.accounting.usage.reader import has_usage
from apps.accounting.forecast.stored import forecast_version, stored_forecast
from apps.accounting.forecast.teams import is_running
from apps.accounting.ledger.statements import (SHARED_IDLE, UNALLOCATED_KEY, clusters_behind, default_period,
                                        period_has_ended, statement, statement_head)
from apps.reports.forecast_rows import forecast_payload, forecasts_by_team
from apps.reports.fragments import fragment_parts
from apps.reports.statement_rows import rate_card_fields, statement_payload
from apps.accounting.ledger.answer import month_zone, statement_version
from apps.clusters.models import Cluster
from apps.teams.access import can_see_money, money_scope, require_team, team_scope
from apps.web.pages import bad_request
from apps.web.params import BadParameters
from apps.web.throttle import throttled_page


def _period(request):
    """(period, None), or (None, a 400 page naming the parameter) for a bad one."""
    params = request.GET if request.GET.get("period") else request.POST
    try:   # the default month is looked up only when none is given
        return parse_period_param(params, default=None if params.get("period") else default_period()), None
    except BadParameters as exc:
        return None, bad_request(request, exc.detail)


@login_required
@throttled_page
def statement_view(request):
    if not can_see_money(request.user):
        raise PermissionDenied("your role may not see money figures")
    period, refused = _period(request)
    if refused:
        return refused
    try:
        shared_idle = parse_choice(request.GET, "shared_idle", SHARED_IDLE, default="apart")
    except BadParameters as exc:
        return bad_request(request, exc.detail)
    team = request.GET.get("team") or ""
    if team:
        require_team(request.user, team, money=True)
    scope = money_scope(request.user)     # never widened by `viewer` (docs/security.md, "Money scope")
    head = statement_head(period)         # closed or open, the rate card, the zone: no line read
    running = not head.closed and is_running(period)
    if team:     # one team's lines drilled down: rendered on every view
        payload = _payload(head, shared_idle, scope, running, team)
        table_html, notes_html = _table_html(period, shared_idle, team, running, payload)
        selected = next((row for row in payload["results"] if row["key"] == team), None)
    else:        # the month's table and totals: stored per version of the month (docs/performance.md)
        payload = None

        def render_table():
            nonlocal payload
            payload = _payload(head, shared_idle, scope, running, "")
            return _table_html(period, shared_idle, "", running, payload)
        table_html, notes_html = fragment_parts(period, "chargeback-page", _version(period, running),
                              [("shared_idle", shared_idle), ("scope", scope_tag(scope)), ("running", int(running))],
                              TABLE_TEMPLATES, render_table)
        selected = None
    # A closed month shows its frozen statement; the hours that came after the close are said,
    # with the month that bills them (docs/chargeback.md, "One month, one answer").
    late = late_hours(period, team_scope(request.user)) if head.closed else []
    api = reverse("api-chargeback")
    query = f"period={period}&shared_idle={shared_idle}"
    closer = may_close(request.user)
    cannot_close = _before_ingest(period) if closer and not head.closed and period_has_ended(period) else None
    # the rows are in the context only when this view rendered them (a stored table has none)
    payload = payload or {"closed": head.closed}
    payload["rate_card"] = rate_card_fields(head)
    return render(request, "chargeback/statement.html", {
        "payload": payload, "table_html": mark_safe(table_html), "notes_html": mark_safe(notes_html),  # our templates
        "period": period, "shared_idle": shared_idle, "running": running, "late": late,
        "selected": selected, "team": team, "unallocated_key": UNALLOCATED_KEY,
        "prev_period": prev_period(period), "next_period": next_period(period),
        "closed": _closed(period) if head.closed else None,
        "ended": period_has_ended(period), "closes_from": period_bounds(period, ZoneInfo(head.zone))[1],
        "closer": closer,
        # a month before the fleet's history has nothing to close: no button that leads to a refusal
        "cannot_close": cannot_close,
        "can_close": closer and not head.closed and period_has_ended(period) and not cannot_close,
        "csv_url": f"{api}?{query}&group_by=team&format=csv",
        "csv_namespace_url": f"{api}?{query}&group_by=namespace&format=csv",
        "focus_url": f"{reverse('api-chargeback-focus')}?period={period}",
        "can_reopen": head.closed and _may_reopen(request.user),
        "xlsx_url": f"{reverse('api-chargeback-xlsx')}?{query}",   # the statement workbook, every view
        "computed_on_read": bool(computed_here()),    # no worker had stored it: said beside the state
    })


# the table and its notes, stored together (the late hours, live, go between them)
TABLE_TEMPLATES = ("chargeback/_statement_table.html", "chargeback/_statement_notes.html")


def _payload(head, shared_idle, scope, running, team) -> dict:
    """The statement (`head`: its `statement_head`) by team as `scope` sees it, `team`'s lines
    drilled down; the running month's rows carry each team's month-end forecast (docs/forecast.md)."""
    period = head.period
    payload = statement_payload(statement(period, shared_idle=shared_idle, head=head), "team", scope, shared_idle,
                                lines_of={team})
    if running:
        forecasts = forecasts_by_team(forecast_payload(stored_forecast(period, teams=scope)))
        for row in payload["results"]:
            row["forecast"] = forecasts.get(row["key"], [])
    return payload


def _table_html(period, shared_idle, team, running, payload) -> list[str]:
    ctx = {"payload": payload, "period": period, "shared_idle": shared_idle, "team": team, "running": running,
           "unallocated_key": UNALLOCATED_KEY, "foot": _foot(payload["results"], running)}
    return [render_to_string(TABLE_TEMPLATES[0], ctx), render_to_string(TABLE_TEMPLATES[1], ctx)]


def _foot(rows, running) -> dict:
    """The Total row's GPU-hours (the rows' own, as shown) and, for the running month, the sum of
    the teams' projected month-ends per currency (the range is not summed: the teams' cheapest and
    dearest days do not fall together)."""
    allocated = sum(row["allocated_gpu_hours"] for row in rows)
    used = sum(row["used_gpu_hours"] for row in rows)
    projected: dict = {}
    for row in rows if running else ():
        for f in row.get("forecast") or ():
            if f.get("projected") is not None and f.get("currency"):
                projected[f["currency"]] = projected.get(f["currency"], Decimal(0)) + Decimal(str(f["projected"]))
    return {"allocated_gpu_hours": allocated, "used_gpu_hours": used,
            "efficiency": used / allocated if allocated else None,
            "unpriced_gpu_hours": sum(row["unpriced_gpu_hours"] for row in rows), "projected": projected}


def _version(period, running) -> str | None:
    """What the stored table is current at: the statement's version; the running month's, the
    stored forecast's (which holds the statement's, the history's and the watermark's)."""
    if running:
        return forecast_version(period)
    return statement_version(period)


def _closed(period):
    """(closed at, closed by) of a closed month, for the page to say who froze it when."""
    return BillingPeriod.objects.select_related("closed_by").filter(period=period).first()


def _before_ingest(period: str) -> str | None:
    """Why an ended month cannot be closed when it ends before the first ingest run's window: the
    close's own rule (`before_history`), asked only when an ingest run says where history begins
    (one small read; the rollup rows themselves are left to the close page)."""
    starts = history_starts()
    if not starts or min(starts) < period_bounds(period, billing_zone())[1]:
        return None
    return before_history(period)


def _may_reopen(user) -> bool:
    try:
        check_may_reopen(user)
    except NotAllowed:
        return False
    return True


def _allowed_period(request, check):
    """(period, None) once the action's own rule (`check`) allows the user — a refusal is a 403,
    the page only answers it — or (None, a 400 page) for a bad period."""
    try:
        check(request.user)
    except NotAllowed as exc:
        raise PermissionDenied(str(exc))
    return _period(request)


@login_required
@throttled_page
@require_http_methods(["POST"])
def reopen_view(request):
    """POST (with CSRF, admins only) reopens a closed month through the audited action, with the
    reason given on the chargeback page (docs/chargeback.md, "Reopening")."""
    period, refused = _allowed_period(request, check_may_reopen)
    if refused:
        return refused
    reason = (request.POST.get("reason") or "").strip()
    if not reason:
        return bad_request(request, {"reason": "say why the month is reopened (it is kept in the audit log)"})
    try:
        do_reopen_period(period, actor=request.user, reason=reason[:500])
    except NotAllowed as exc:
        raise PermissionDenied(str(exc))
    except ActionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{period} is open again: its figures follow ingestion until it is closed.")
    return redirect(f"{reverse('chargeback:statement')}?period={period}")


@login_required
@throttled_page
@require_http_methods(["GET", "POST"])
def close_view(request):
    """GET asks for confirmation, saying what closing freezes and what is not in yet; only an
    ended month offers the button. POST (with CSRF) closes."""
    period, refused = _allowed_period(request, check_may_close)
    if refused:
        return refused
    if request.method == "POST":
        try:
            do_close_period(period, actor=request.user)
        except NotAllowed as exc:
            raise PermissionDenied(str(exc))
        except ActionError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"{period} is closed; its statement is frozen.")
        return redirect(f"{reverse('chargeback:statement')}?period={period}")
    zone = month_zone(period)
    start, end = period_bounds(period, zone)
    stmt = statement(period)
    behind = clusters_behind(period)
    return render(request, "chargeback/close_confirm.html", {
        # the zone's name only where the times' abbreviation does not already say it ("CET" is
        # Europe/Berlin; "UTC" is UTC, never "UTC (UTC)")
        "period": period, "zone_note": "" if start.astimezone(zone).strftime("%Z") == zone.key else zone.key,
        "period_start": start, "period_end": end,
        "ended": period_has_ended(period), "closed": stmt.closed,
        "before_history": None if stmt.closed else before_history(period),
        "behind": list(Cluster.objects.filter(name__in=behind).order_by("name").values("name", "ingested_until")),
        "has_usage": has_usage(start, end),
        "payload": statement_payload(stmt, "team", None),
    })
