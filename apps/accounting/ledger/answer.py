"""A billing month's answer as computed and stored: the cells and lines `ledger.statements.statement`
is made of (docs/performance.md, "Stored month answers").

`month_lines(period)` is an open month's statement lines — its own usage lines and the
adjustments for the closed months right before it — exactly `ledger.statements.compute_open(period)`,
read from the stored answers (`stored/answers.py`) when they are current. `window_cells(f)` is
`usage_cells(f, per_day=False)`, from the month's stored cells when the window is a whole
billing month. The statement and the usage API's month rows read through these two; pages and
the API also read here the versions that key their stored bodies (`statement_version`,
`usage_version`).
"""
from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timedelta, timezone

from django.conf import settings
from django.db.models import Q

from apps.teams.resolve import renamed_teams

from apps.accounting.stored.answers import answer, day_answers, day_part, drop_parts, month_kept, store_current
from apps.accounting.stored.versions import CODE_VERSION, Inputs, read_inputs, read_once, stored_answers
from apps.accounting.stored.rows import day_cells, merged_day_cells, read_current
from apps.accounting.core.lines import Cell, Line, build_lines
from apps.accounting.core.periods import MAX_YEAR, MIN_YEAR, last_day, next_period, period_bounds, period_of, prev_period
from apps.accounting.calendar.zone import billing_zone, day_start, in_zone
from apps.accounting.ledger.late_data import delta_cells
from apps.accounting.ledger import frozen
from apps.accounting.models import BillingPeriod, MonthAnswer
from apps.accounting.usage.team_mapping import config_as_of, team_resolver
from apps.accounting.pricing.rates import closing_card, load_rate_card

from apps.accounting.usage.cells import UsageFilter, span_starts, usage_cells


def month_cells(period: str, *, per_day: bool = True, days: list[date] | None = None, resolver=None) -> list:
    """The month's usage cells; `days` (consecutive): only those billing days of it."""
    zone = billing_zone()
    start, end = period_bounds(period, zone)
    if days:
        start, end = day_start(days[0], zone), day_start(days[-1] + timedelta(days=1), zone)
    return usage_cells(UsageFilter(start=start, end=end), per_day=per_day, resolver=resolver)


def billing_days(period: str) -> list[date]:
    """The billing days of a month, in order."""
    first = date(int(period[:4]), int(period[5:7]), 1)
    return [first + timedelta(days=i) for i in range((last_day(period) - first).days + 1)]


def closed_periods(*, fresh: bool = False) -> dict[str, BillingPeriod]:
    """The closed months (read once within `stored.versions.versions_read_once` unless `fresh`)."""
    def read():
        return {bp.period: bp for bp in BillingPeriod.objects.filter(closed_at__isnull=False)}
    return dict(read() if fresh else read_once("closed", read))


def closed_before(period: str, closed: dict[str, BillingPeriod]) -> list[str]:
    """The closed months right before `period`, latest first: their late data is booked in it."""
    out, earlier = [], prev_period(period)
    while earlier in closed:
        out.append(earlier)
        earlier = prev_period(earlier)
    return out


def as_closed(bp: BillingPeriod):
    """Within the block, the team mapping and the node pools are read as the closed month `bp`'s
    close read them (`usage.team_mapping.config_as_of`): the label history as it stood at the close for
    the hours each cluster had ingested by then (`BillingPeriod.watermarks`), the labels ingested
    since for later hours; label trust, claims, known teams and node pools at the close. The one
    rule for attributing a closed month's hours, its late data's and its views' alike
    (docs/accounting.md, "Late data for a closed month")."""
    known = {name: datetime.fromisoformat(at) if at else None for name, at in (bp.watermarks or {}).items()}
    return config_as_of(bp.closed_at, known)


def late_cells(earlier: str, bp: BillingPeriod) -> list[Cell]:
    """A closed month's late data, computed: its live per-day cells minus what statements carry,
    both in the zone the month was closed in (its days are the frozen cells' days), the live ones
    attributed as the month's configuration stood at its close (`as_closed`: label history, label
    trust, claims, known teams, node pools). The frozen cells of a cluster that no longer exists
    are left out: its hours did not vanish, its rows were deleted, and a closed month is never
    credited for that (docs/accounting.md, "Late data for a closed month")."""
    from apps.clusters.models import Cluster

    with in_zone(bp.billing_timezone), as_closed(bp):
        live = month_cells(earlier)
    existing = set(Cluster.objects.values_list("pk", flat=True))
    # A team renamed since is the same team: what the close booked under its old name is its.
    renamed = renamed_teams()
    carried = [replace(c, team=renamed.get(c.team, c.team)) if c.team in renamed else c
               for c in frozen.carried_cells(bp) if c.cluster_id in existing]
    return delta_cells(live, carried)


def month_zone(period: str, closed: dict[str, BillingPeriod] | None = None):
    """The zone a month's days and bounds are read in: a closed month's own (stored at its close),
    else `BILLING_TIMEZONE` (docs/chargeback.md, "3. Close the month")."""
    bp = (closed if closed is not None else closed_periods()).get(period)
    with in_zone(bp.billing_timezone if bp is not None else None):
        return billing_zone()


def month_bounds(period: str):
    """[start, end) of a billing month as UTC-aware instants, in the month's zone (`month_zone`)."""
    return period_bounds(period, month_zone(period))


# ---------------------------------------------------------------- through the stored answers

def own_cells(period: str, inputs: Inputs | None = None) -> list[Cell]:
    """The month's span cells (`usage_cells(per_day=False)` of the whole month). Stored, they
    are assembled from the month's day parts (`day_parts`): an ingested hour recomputes its
    day, and the month is a merge of stored days (docs/performance.md, "Per-day parts")."""
    def compute(i):
        if i is None:
            return month_cells(period, per_day=False)
        start, end = period_bounds(period, billing_zone())
        # One reading of the team mapping for the stale days and the spans, taken when the first
        # stale day is computed (after its version was read again under its lock), else now.
        read: list = []

        def resolver():
            if not read:
                read.append(team_resolver())
            return read[0]
        ids = day_parts(period, i, resolver=resolver)
        return merged_day_cells(ids, span_starts(UsageFilter(start=start, end=end), resolver()))
    return answer(period, MonthAnswer.CELLS, lambda i: i.cells(period), compute, inputs)


def day_parts(period: str, inputs: Inputs | None = None, *, hold: bool = False, resolver=None) -> list[int]:
    """The ids of the month's stored day parts, every one current (stale days recomputed).
    `resolver`: a function giving the team mapping to compute them with (read when called)."""
    return day_answers(period, billing_days(period),
                       lambda run: month_cells(period, days=run, resolver=resolver() if resolver else None),
                       inputs, hold=hold)


def own_days(period: str, inputs: Inputs | None = None) -> list[Cell]:
    """The month's per-day cells (`usage_cells` of the whole month), day by day: what closing
    freezes, what the FOCUS export splits each line over and what the span cells merge."""
    if not stored_answers() or not month_kept(period):
        return month_cells(period)
    return day_cells(day_parts(period, inputs))


def stored_days(first: date, after: date) -> list[Cell]:
    """The per-day cells of the billing days [first, after), read from their months' stored day
    parts (each proven current, a stale one recomputed): what `usage_cells` gives for those whole
    days, without reading the usage tables when the worker has kept the days current. Postgres
    (stored answers) only."""
    cells: list[Cell] = []
    period = period_of(first)
    while period <= period_of(after - timedelta(days=1)):
        days = billing_days(period)
        ids = day_parts(period)
        wanted = [pk for d, pk in zip(days, ids) if first <= d < after]
        if wanted:
            cells += day_cells(wanted)
        period = next_period(period)
    return cells


def own_lines(period: str, inputs: Inputs | None = None) -> list[Line]:
    """The month's own statement lines (usage and unallocated), sorted."""
    # The rate card is read inside, after the version: a rate edit meanwhile makes it stale.
    return answer(period, MonthAnswer.LINES, lambda i: i.lines(period),
                  lambda i: build_lines(own_cells(period, i), load_rate_card()), inputs)


def stored_own_lines(period: str, inputs: Inputs) -> list[Line] | None:
    """The month's own lines if stored and current at `inputs` (a read only: nothing computed or
    stored, so a second connection in the close's snapshot may run it), else None."""
    return read_current(period, MonthAnswer.LINES, inputs.lines(period))


def month_late_cells(earlier: str, bp: BillingPeriod, inputs: Inputs | None = None) -> list[Cell]:
    """A closed month's late data, stored until an input of that month changes (ingest writing
    into it logs its dates): the months after it read no frozen cells unless something changed."""
    return answer(earlier, MonthAnswer.DELTA, lambda i: i.delta(earlier), lambda _i: late_cells(earlier, bp), inputs)


def zone_edge_cells(period: str, closed: dict, *, per_day: bool = False) -> list[Cell]:
    """The hours between where the closed month before `period` ended (in the zone it was closed
    in) and where `period` starts in today's zone, when the two differ (docs/chargeback.md, "The
    billing time zone of closed months"): the open month starts where the closed one ended, so
    hours no month billed are added to it and hours the closed month billed already are taken
    off it (as negative cells). Empty when the zones agree."""
    before = prev_period(period)
    if before not in closed:
        return []
    ended = period_bounds(before, month_zone(before, closed))[1]
    starts = period_bounds(period, billing_zone())[0]
    if ended == starts:
        return []
    lo, hi, sign = (ended, starts, 1.0) if ended < starts else (starts, ended, -1.0)
    cells = usage_cells(UsageFilter(start=lo, end=hi), per_day=per_day)
    if sign > 0:
        return cells
    return [replace(c, gpu_seconds=-c.gpu_seconds, used_gpu_seconds=-c.used_gpu_seconds,
                    idle_gpu_seconds=-c.idle_gpu_seconds, mig_seconds=-c.mig_seconds) for c in cells]


def month_lines(period: str) -> list[Line]:
    """`compute_open(period).lines`, through the stored answers: the month's own lines, then
    per closed month before it its late data priced as adjustment lines with the card that month
    was closed with (`pricing.rates.closing_card`, docs/accounting.md "Late data for a closed month")."""
    closed = closed_periods()
    chain = closed_before(period, closed)
    # With each date's versions too (one query either way): a stale month's day parts need them.
    inputs = read_inputs([period, *chain], days=True) if stored_answers() else None
    edge = zone_edge_cells(period, closed)
    # After a zone change the month's lines are priced with its edge hours (rare: never stored).
    lines = list(own_lines(period, inputs)) if not edge else \
        build_lines(list(own_cells(period, inputs)) + edge, load_rate_card())
    for earlier in chain:
        delta = month_late_cells(earlier, closed[earlier], inputs)
        if delta:
            lines += build_lines(delta, closing_card(closed[earlier]), kind_allocated="adjustment",
                                 kind_unallocated="adjustment", adjusts_period=earlier)
    return sorted(lines, key=Line.sort_key)


def prepare_month(period: str) -> None:
    """Compute whatever of a month's answer is not current — its stale day parts, then its
    span cells and lines from them, the late data of the closed months before it — so the next
    read or close finds it stored (`tasks.prepare_month_answers`)."""
    month_lines(period)


def prune_closed_months() -> list[str]:
    """Drop what closed months no longer read: their open-month parts (cells, lines, per-day
    cells; a closed month shows its frozen lines). Their late data and bodies stay."""
    if not stored_answers():
        return []
    closed = set(closed_periods())
    stored = set(MonthAnswer.objects.filter(Q(part__in=OPEN_PARTS) | Q(part__startswith="day"), period__in=closed)
                 .values_list("period", flat=True))
    for period in sorted(stored):
        drop_parts(period, OPEN_PARTS + tuple(day_part(d) for d in billing_days(period)))
    return sorted(stored)


OPEN_PARTS = (MonthAnswer.CELLS, MonthAnswer.LINES, MonthAnswer.DAYS)   # DAYS: kept before the day parts


def record_closed(months: list[str]) -> None:
    """Inside a close: the closed month and those whose late data it booked now have none."""
    if stored_answers():
        for m in months:
            store_current(m, MonthAnswer.DELTA, lambda i, m=m: i.delta(m), [])


def whole_month(f: UsageFilter) -> str | None:
    """The billing month a window is exactly, or None."""
    zone = billing_zone()
    period = period_of(f.start.astimezone(zone).date())
    if not MIN_YEAR <= int(period[:4]) <= MAX_YEAR:    # a default start a week before 1 January 2000
        return None
    start, end = period_bounds(period, zone)
    if f.start.astimezone(timezone.utc) == start.astimezone(timezone.utc) and \
            f.end.astimezone(timezone.utc) == end.astimezone(timezone.utc):
        return period
    return None


def window_cells(f: UsageFilter) -> list[Cell]:
    """`usage_cells(f, per_day=False)`; a whole billing month of every cluster from its stored
    cells (a team scope filters them afterwards, as `usage_cells` does)."""
    period = whole_month(f) if stored_answers() else None
    if period is None or f.cluster or f.namespaces is not None or f.gpu_models is not None:
        return usage_cells(f, per_day=False)
    cells = own_cells(period)
    if f.teams is not None:
        cells = [c for c in cells if c.namespace and c.team in f.teams]
    return cells


# ---------------------------------------------------------------- versions of whole answers

def statement_version(period: str, *, closed: dict | None = None, inputs: Inputs | None = None) -> str | None:
    """The version a month's statement is shown from (None: not kept, SQLite): a closed month's
    by its close; an open month's by its lines and the late data of the closed months before it.
    `closed` (`closed_periods`) and `inputs` (read with the month and the closed months before it):
    when the caller has read them already."""
    if not stored_answers():
        return None
    closed = closed_periods() if closed is None else closed
    if period in closed:
        # Its frozen lines change only by a reopen (and a new close); the zone shapes the window echoed.
        return f"{CODE_VERSION}|{settings.BILLING_TIMEZONE}|closed {closed[period].closed_at.isoformat()}"
    chain = closed_before(period, closed)
    inputs = inputs or read_inputs([period, *chain])
    return "|".join([inputs.lines(period), *(f"{m} closed {closed[m].closed_at.isoformat()}:{inputs.delta(m)}"
                                            for m in chain)])


def usage_version(f: UsageFilter, priced: bool, *, scoped: bool = False, also: tuple[str, ...] = ()) -> tuple[str, str] | None:
    """(period, version) of a usage window that is a whole month read from its stored cells
    (`window_cells`) for the whole fleet — or, with `scoped`, for a set of teams too (their rows
    are filtered from the same cells, so the version is the same); None for any other window,
    filter or database. `also`: undated categories of the log the caller reads besides
    (`stored.inputs.UNDATED`: a page part reading pod owners or quotas), in the same query."""
    if not stored_answers() or f.cluster or (f.teams is not None and not scoped) or f.namespaces is not None \
            or f.gpu_models is not None:
        return None
    period = whole_month(f)
    if period is None:
        return None
    inputs = read_inputs([period])
    extra = "".join(f"|{c} {inputs.undated.get(c)}" for c in also)
    # Priced, a month's money is its ledger's (its statement rounded as a whole): the version of
    # the statement, with the hours' own.
    return period, (f"{inputs.cells(period)}|{statement_version(period)}" if priced else inputs.cells(period)) + extra
