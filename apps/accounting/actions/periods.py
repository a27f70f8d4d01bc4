"""Closing and reopening a billing month, and who may: atomic and audited (docs/chargeback.md,
"3. Close the month")."""
from __future__ import annotations

import contextlib

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.db.models import Min
from django.utils import timezone

from apps.teams.access import can_close_periods, is_admin

from apps.accounting.db.bulk import beside_in_snapshot, collector_paused, insert_rows, one_snapshot, planner_settings
from apps.accounting.core.lines import Line, build_lines, cost_by_currency
from apps.accounting.core.periods import parse_period, period_bounds
from apps.accounting.core.rounding import present
from apps.accounting.checks import closed_in_other_zones, zone_change
from apps.accounting.ledger.frozen import CELL_COLUMNS, booked_elsewhere, freeze_select, unfreeze, write_cells
from apps.accounting.models import BillingPeriod, MonthCell, Rate, StatementLine, UsageHour
from apps.accounting.ledger.answer import closed_before, closed_periods, record_closed
from apps.accounting.stored.refresh import refresh_after_commit
from apps.accounting.signals import announce_close, history_starts
from apps.accounting.ledger.statements import closing_computation, period_has_ended, watermarks_now
from apps.accounting.pricing.rates import load_rate_card
from apps.accounting.stored.spans import merged_in_db
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.usage.cells import CELL_SQL_COLUMNS, UsageFilter, fixed_day_cells

from apps.accounting.actions.audit import ActionError, NotAllowed, audit

# Who may close and reopen a month is decided here and only here; the page, the API, the
# Django admin and the command line all ask these (docs/chargeback.md, "Who may close").
CLOSE_REFUSED = "only finance or an admin can close a billing period"
REOPEN_REFUSED = "only an admin can reopen a closed period"


def check_may_close(actor) -> None:
    """Raise NotAllowed unless `actor` may close months. No actor is the operator at the
    command line (manage.py close_period without --user), who may."""
    if actor is not None and not can_close_periods(actor):
        raise NotAllowed(CLOSE_REFUSED)


def may_close(actor) -> bool:
    """Whether the close button is shown: the same rule as `check_may_close`."""
    try:
        check_may_close(actor)
    except NotAllowed:
        return False
    return True


def check_may_reopen(actor) -> None:
    if not is_admin(actor):
        raise NotAllowed(REOPEN_REFUSED)


def _period(text: str) -> str:
    try:
        return parse_period(text)
    except ValueError as exc:
        raise ActionError(str(exc)) from None


def _lock_period(period: str) -> BillingPeriod:
    """Lock the month's row and the rows of the closed months right before it (the ones a close
    books late data for), oldest first, so two closes and reopens wait for each other and never
    deadlock (docs/chargeback.md, "Closing and reopening at the same time").

    In a close's snapshot (REPEATABLE READ) a row another transaction changed since the snapshot
    began fails the lock with a serialization error, which the close reports as a refusal."""
    bp, _ = BillingPeriod.objects.get_or_create(period=period)
    chain = closed_before(period, closed_periods())
    locked = {row.period: row for row in BillingPeriod.objects.select_for_update()
              .filter(period__in=[*chain, period]).order_by("period")}
    for earlier in chain:
        if not locked[earlier].is_closed:     # reopened before we locked it (READ COMMITTED)
            raise ActionError(f"{earlier} was reopened by someone else meanwhile; look at {period} again")
    return locked[period]


def do_close_period(period: str, actor=None) -> BillingPeriod:
    """Freeze a month's statement: lines as shown (numbers, rates, teams) and the usage cells
    behind them, so later ingests, rate edits and team moves never change it."""
    check_may_close(actor)
    period = _period(period)
    if not period_has_ended(period):
        raise ActionError(f"{period} has not ended yet in {billing_zone().key}; it can be closed from "
                          f"{period_bounds(period, billing_zone())[1].date()} on")
    refused = before_history(period) or other_zones(period)
    if refused:
        raise ActionError(refused)
    outermost = not connection.in_atomic_block
    if outermost:
        # Exists before the snapshot below is taken, so the lock finds it even when another
        # close created it a moment ago.
        BillingPeriod.objects.get_or_create(period=period)
    try:
        # Every read of the close sees the database as at its first query, whatever an ingest
        # commits meanwhile: the month's usage and the check of the closed months before it come
        # from the same moment (docs/figures.md, "Closing a month"). Only the outermost block can
        # set that (it must come first); a caller's transaction keeps its own level.
        snapshot = one_snapshot() if outermost else contextlib.nullcontext()
        with transaction.atomic(), collector_paused(), snapshot:
            return _close(period, actor)
    except OperationalError as exc:
        if getattr(exc.__cause__, "sqlstate", None) == SERIALIZATION_FAILURE:
            raise ActionError(f"{period} or a closed month right before it was closed or reopened by someone "
                              "else while this close ran; look at it again") from None
        raise


SERIALIZATION_FAILURE = "40001"


def history_start():
    """The fleet's first ingested hour: its first rollup hour, or the start of the first
    succeeded ingest run (one that found nothing still covered its window); None: nothing yet."""
    first = UsageHour.objects.aggregate(first=Min("hour_start"))["first"]
    return min([s for s in (first, *history_starts()) if s is not None], default=None)


def other_zones(period: str) -> str | None:
    """Why `period` cannot be closed when months were closed in another billing zone, else None:
    its hours would be bucketed into days and months differently from theirs (docs/chargeback.md,
    "The billing time zone of closed months")."""
    others = closed_in_other_zones()
    if not others:
        return None
    return (f"{zone_change(others)}: closing {period} in {settings.BILLING_TIMEZONE} would bucket its hours "
            f"differently from them. Set BILLING_TIMEZONE back to {' or '.join(sorted(others))}, or have an "
            f"admin reopen {'those months' if sum(map(len, others.values())) > 1 else 'that month'}")


def before_history(period: str) -> str | None:
    """Why `period` cannot be closed when it ends before the fleet's history begins, else None.
    Such a month has nothing to close; a frozen empty statement would only hide it from
    corrections (docs/chargeback.md, "3. Close the month")."""
    zone = billing_zone()
    end = period_bounds(period, zone)[1]
    first = history_start()
    if first is None:
        return (f"{period} ends before the fleet's history begins: nothing has been ingested yet, "
                "so there is nothing to close")
    if first >= end:
        return (f"{period} ends before the fleet's history begins (its first ingested hour: "
                f"{first.astimezone(zone):%Y-%m-%d %H:%M} {zone.key}); there is nothing to close")
    return None


def _close(period: str, actor) -> BillingPeriod:
    """The close itself, inside do_close_period's transaction."""
    bp = _lock_period(period)
    if bp.is_closed:
        raise ActionError(f"{period} is already closed")
    computed = closing_computation(period)
    if computed.own_in_db:      # nothing stored: the database freezes the month's cells
        computed.lines = sorted(freeze_month(period, bp.pk) + computed.lines, key=Line.sort_key)
    elif computed.days_answer is not None:
        # The month's stored per-day cells are copied server-side while a second connection in
        # this snapshot reads its stored lines (`db.bulk.beside_in_snapshot`). That read finds none
        # when they were stale (they are computed and stored here after the copy): it sees none
        # of this transaction's own writes.
        with beside_in_snapshot(computed.stored_lines) as stored:
            freeze_stored_cells(computed.days_answer, bp.pk)
        own = stored.result()
        computed.lines = sorted((own if own is not None else computed.own_lines()) + computed.lines,
                                key=Line.sort_key)
    insert_rows(StatementLine, ("period_id", "kind", "adjusts_period", "team", "cluster", "namespace", "gpu_model",
                              "mig_profile", "price_class", "rate_basis", "hourly_rate", "currency",
                              "allocated_gpu_seconds", "used_gpu_seconds", "billed_seconds", "cost"),
              ((bp.pk, line.kind, line.adjusts_period, line.team, line.cluster, line.namespace, line.gpu_model,
                line.mig_profile, line.price_class, line.rate_basis, line.hourly_rate, line.currency,
                float(line.allocated_gpu_seconds), float(line.used_gpu_seconds), float(line.billed_seconds),
                line.cost) for line in computed.lines))
    targets = {period: bp.pk}
    for earlier in computed.deltas:
        targets[earlier] = BillingPeriod.objects.get(period=earlier).pk
    frozen = [(period, c) for c in computed.cells]
    frozen += [(earlier, c) for earlier, cells in computed.deltas.items() for c in cells]
    write_cells((targets[p], bp.pk, c) for p, c in frozen)
    # The closed month and every month whose late data this close booked have none left now.
    record_closed([period, *closed_before(period, closed_periods())])
    bp.closed_at = timezone.now()
    bp.closed_by = actor if actor and actor.is_authenticated else None
    bp.billing_timezone = billing_zone().key
    last = Rate.history.order_by("-history_id").values_list("history_id", "history_date").first()
    bp.rate_card_version, bp.rate_card_changed_at = last if last else (None, None)
    bp.watermarks = watermarks_now()
    bp.save()
    totals = {c: present(a, c) for c, a in cost_by_currency(computed.lines).items()}
    audit(actor, "period.close", period, {"closed": False},
           {"closed": True, "lines": len(computed.lines), "cost_by_currency": totals,
            "adjusted_periods": sorted(computed.deltas)})
    announce_close(bp)   # after commit: statements by e-mail (apps/accounting/signals.py)
    refresh_after_commit([period])   # the month after it now carries its late data
    return bp


def freeze_stored_cells(answer_ids: list[int], period_id: int) -> None:
    """A month's stored day parts (proven current in the close's snapshot) become its frozen
    cells in one INSERT … SELECT: nothing goes through Python."""
    freeze_select(f"SELECT {', '.join(CELL_COLUMNS)}, day FROM {MonthCell._meta.db_table} WHERE answer_id = ANY(%s)",
                  [list(answer_ids)], period_id)


# A frozen cell's columns with its day among them, as `_month_cells_sql` selects them.
_FROZEN_COLUMNS = (*CELL_COLUMNS[:7], "day", *CELL_COLUMNS[7:])


def freeze_month(period: str, period_id: int) -> list[Line]:
    """A month with nothing stored (or too much of it stale), frozen in the close's snapshot with
    little of it coming through Python: the database writes the per-day cells of every namespace
    whose team cannot change in the month straight into its frozen cells (`usage.cells.fixed_day_cells`;
    the others are computed here and sent along as arrays), while a second connection in the same
    snapshot sums the very same cells into span cells (`stored.spans.merged_in_db`, as a stored month's
    day parts are summed) and prices the month's lines from them — the same lines the month shows
    while open, and the same lines a close from stored parts writes. The two run on two cores
    (`db.bulk.beside_in_snapshot`). Returns those lines (usage and unallocated). docs/performance.md,
    "Bulk writes"."""
    start, end = period_bounds(period, billing_zone())
    select, rest, starts = fixed_day_cells(UsageFilter(start=start, end=end))
    cells, params = _month_cells_sql(select, rest)
    # The planner cannot know the month's grouped rows are 230,000, not a thousand, and would
    # sort them by namespace to merge-join the teams (1.3 s); hashing them takes 0.45 s.
    with beside_in_snapshot(lambda: build_lines(merged_in_db(cells, params, starts, idle=False),
                                                load_rate_card())) as lines:
        with planner_settings(enable_mergejoin="off"):
            freeze_select(cells, params, period_id)
    return lines.result()


def _month_cells_sql(select: tuple[str, list] | None, rest: list) -> tuple[str, list]:
    """The month's per-day cells as one SELECT with the frozen cells' columns: the database's own
    (`select`, columns `CELL_SQL_COLUMNS`) and those computed in Python (`rest`, as arrays)."""
    parts, params = [], []
    if select is not None:
        sql, select_params = select
        parts.append(f"SELECT c.cluster_id AS cluster_id_value, c.cluster, c.namespace, c.team, c.gpu_model, "
                     "c.mig_profile, c.price_class, c.day, c.gpu_seconds, c.used_gpu_seconds, c.idle_gpu_seconds, "
                     "c.mig_seconds "
                     f"FROM ({sql}) AS c({', '.join(CELL_SQL_COLUMNS)})")
        params += select_params
    if rest or select is None:
        parts.append("SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
                     "%s::text[], %s::date[], %s::float8[], %s::float8[], %s::float8[], %s::float8[]) "
                     f"AS r({', '.join(_FROZEN_COLUMNS)})")
        params += [[c.cluster_id for c in rest], [c.cluster for c in rest], [c.namespace for c in rest],
                   [c.team for c in rest], [c.gpu_model for c in rest], [c.mig_profile for c in rest],
                   [c.price_class for c in rest], [c.day for c in rest], [c.gpu_seconds for c in rest],
                   [c.used_gpu_seconds for c in rest], [c.idle_gpu_seconds for c in rest],
                   [c.mig_seconds for c in rest]]
    return " UNION ALL ".join(parts), params


def do_reopen_period(period: str, actor, reason: str = "") -> BillingPeriod:
    """Admins only: drop the frozen statement so the month is computed live again; `reason`
    (the chargeback page asks for one) is kept in the audit event."""
    check_may_reopen(actor)
    period = _period(period)
    with transaction.atomic():
        bp = _lock_period(period)
        if not bp.is_closed:
            raise ActionError(f"{period} is not closed")
        later = booked_elsewhere(bp)
        if later:
            raise ActionError(f"{period} has adjustments booked in the closed period(s) "
                              f"{', '.join(sorted(later))}; reopen those first")
        lines = bp.lines.count()
        bp.lines.all().delete()
        unfreeze(bp)
        old = {"closed": True, "closed_at": bp.closed_at.isoformat(),
               "closed_by": bp.closed_by.username if bp.closed_by else None, "lines": lines}
        bp.closed_at = None
        bp.closed_by = None
        bp.save()
        audit(actor, "period.reopen", period, old, {"closed": False, **({"reason": reason} if reason else {})})
        refresh_after_commit([period])   # open again: its own parts are read, and kept current
    return bp
