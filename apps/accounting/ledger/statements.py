"""A month's statement, the one read of a month's money (docs/chargeback.md, "One month, one
answer"): an open month's lines from its stored answer (`answer.py`, computed when stale), a closed
month's read back from its frozen lines. Every other view of a month (`money.py`, `facts.py`,
`daily_money.py`, the forecast) is cut from `statement(period)`.

A statement here is data: its lines with their exact and shown costs as Decimals. How it is
shown — the rows the API, the CSV, the XLSX and the HTML page all show — is
`apps/reports/statement_rows.py` (docs/conventions.md, "One query, every output").
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.utils import timezone

from apps.accounting.stored.answers import stale_days
from apps.accounting.core.lines import Line, build_lines, cost_by_currency
from apps.accounting.core.shared_idle import spread_shared_idle
from apps.accounting.core.periods import period_bounds, period_of
from apps.accounting.core.ratecard import RateCard, to_decimal
from apps.accounting.core.rounding import assign_shown, shown_amounts
from apps.accounting.stored.versions import read_inputs, stored_answers
from apps.accounting.models import BillingPeriod, Rate, StatementLine, UsageHour
from apps.accounting.ledger.answer import (billing_days, closed_before, closed_periods, day_parts, late_cells,
                     month_cells, month_late_cells, month_lines, month_zone, own_lines, stored_own_lines)
from apps.accounting.pricing.rates import load_rate_card
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.core.periods import last_day
from apps.accounting.pricing.rates import closing_card

SHARED_IDLE = ("apart", "spread")
UNALLOCATED_KEY = "unallocated"


def default_period():
    """The last complete month in the billing zone, the one finance reviews and closes; the
    month to date instead while the last one holds no usage (a portal in its first month)."""
    zone = billing_zone()
    first = timezone.now().astimezone(zone).date().replace(day=1)
    last_month = period_of(first - timedelta(days=1))
    start, end = period_bounds(last_month, zone)
    if UsageHour.objects.filter(hour_start__gte=start, hour_start__lt=end).exists():
        return last_month
    return period_of(first)


@dataclass
class Statement:
    period: str
    closed: bool
    lines: list[Line]
    closed_at: object = None
    rate_card: RateCardUsed | None = None   # the card's last change it used
    zone: str = ""                    # the zone its days and bounds are in (a closed month's close zone)


@dataclass
class OpenComputation:
    """What closing a period freezes: its lines, its own cells, and the late-data cells per
    earlier closed month that its adjustment lines were computed from."""
    lines: list[Line]
    cells: list
    deltas: dict[str, list]
    days_answer: list[int] | None = None   # the month's cells are these stored day parts' (MonthAnswer ids)
    # With `days_answer`: the month's own lines are not in `lines` yet. `stored_lines()` reads them
    # if stored and current (a read only: the close runs it on a second connection while it
    # freezes the days); `own_lines()` reads or computes them (when that read found none).
    stored_lines: Callable[[], list[Line] | None] | None = None
    own_lines: Callable[[], list[Line]] | None = None
    own_in_db: bool = False    # nothing stored: the close freezes the month's cells in the database and
                               # prices its own lines from them (`actions.periods.freeze_month`); `lines` are the adjustments


def compute_open(period: str, card: RateCard | None = None, *, for_closing: bool = False) -> OpenComputation:
    """The live statement, computed directly: this month's usage, plus adjustments for the closed
    months right before it (a closed month's corrections go to the first open month after it).
    Closing and the FOCUS export's day figures call it; shown statements read the same lines
    through the stored month answers (`ledger.answer.month_lines`, docs/performance.md).

    Shown, the lines are priced from span cells (`usage_cells(per_day=False)`: a month is a few
    cells per namespace, not one per day). Closing (`for_closing`) reads the per-day cells once
    and prices the lines from those very cells, which are then frozen as the baseline later
    data is measured against: the statement and its baseline cannot differ, so an hour is
    billed either now or as a later adjustment, never neither (docs/figures.md). Spans and
    days give the same lines (`core.lines.line_sums` sums either exactly).
    """
    card = card or load_rate_card()
    cells = month_cells(period) if for_closing else []
    lines = build_lines(cells if for_closing else month_cells(period, per_day=False), card)
    adjustments, deltas = _adjustments(period, lambda earlier, bp: late_cells(earlier, bp))
    return OpenComputation(lines=sorted(lines + adjustments, key=Line.sort_key), cells=cells, deltas=deltas)


def _adjustments(period: str, late_of) -> tuple[list[Line], dict[str, list]]:
    """The adjustment lines the month carries for the closed months right before it, and their
    late cells by month: `late_of(month, its BillingPeriod)` gives a closed month's late cells,
    priced with the card that month was closed with (`pricing.rates.closing_card`)."""
    closed = closed_periods()
    lines, deltas = [], {}
    for earlier in closed_before(period, closed):
        delta = late_of(earlier, closed[earlier])
        if delta:
            deltas[earlier] = delta
            lines += build_lines(delta, closing_card(closed[earlier]), kind_allocated="adjustment",
                                 kind_unallocated="adjustment", adjusts_period=earlier)
    return lines, deltas


# A close recomputes at most this many stale day parts in its snapshot; with more stale (a deploy
# makes every stored part stale until the worker has run) or none stored, the database freezes
# the month directly. At 10,000 GPUs a stale day costs the close ~0.2 s, the direct freeze ~1.3 s
# more than a prepared close: past six days the direct freeze is the quicker (docs/performance.md,
# "A close never recomputes a month").
CLOSE_RECOMPUTES_AT_MOST = 6


def closing_computation(period: str) -> OpenComputation:
    """What closing a month freezes, read in the close's snapshot. Once the month has stored day
    parts (the worker keeps them current after every write), the close reads them: the few days
    stale in its snapshot are recomputed there, the lines come from the stored answer (spans
    merged from those very days), and the day parts stay in the database for the close to copy
    server-side (`days_answer`, their locks held until it commits). A month with nothing stored,
    or with more than `CLOSE_RECOMPUTES_AT_MOST` days stale, is frozen by the database
    (`own_in_db`: `actions.periods.freeze_month`); without stored answers (SQLite), computed directly
    (`compute_open(period, for_closing=True)`). The closed months' late data comes from their
    stored answers, proven the same way (docs/performance.md, "Closing from the stored parts")."""
    if not stored_answers():
        return compute_open(period, for_closing=True)
    chain = closed_before(period, closed_periods())
    inputs = read_inputs([period, *chain], days=True)
    if len(stale_days(period, billing_days(period), inputs)) > CLOSE_RECOMPUTES_AT_MOST:
        # The database freezes the month's cells and prices its lines from them; here, only the
        # months before it.
        adjustments, deltas = _adjustments(period, lambda earlier, bp: late_cells(earlier, bp))
        return OpenComputation(lines=adjustments, cells=[], deltas=deltas, own_in_db=True)
    days = day_parts(period, inputs, hold=True)
    adjustments, deltas = _adjustments(period, lambda earlier, bp: month_late_cells(earlier, bp, inputs))
    return OpenComputation(lines=adjustments, cells=[], deltas=deltas, days_answer=days,
                           stored_lines=lambda: stored_own_lines(period, inputs),
                           own_lines=lambda: list(own_lines(period, inputs)))


def line_from_row(r: StatementLine) -> Line:
    return Line(kind=r.kind, team=r.team, cluster=r.cluster, namespace=r.namespace, gpu_model=r.gpu_model,
                mig_profile=r.mig_profile, price_class=r.price_class, rate_basis=r.rate_basis,
                hourly_rate=r.hourly_rate, currency=r.currency,
                allocated_gpu_seconds=to_decimal(r.allocated_gpu_seconds),
                used_gpu_seconds=to_decimal(r.used_gpu_seconds), billed_seconds=to_decimal(r.billed_seconds),
                adjusts_period=r.adjusts_period, fixed_cost=r.cost)


@dataclass(frozen=True)
class RateCardUsed:
    """Which rate card a statement used: the version (id of its last change in the rate
    history, Django admin → Rates → History) and when that change was made."""
    version: int
    changed_at: datetime | None


def _rate_card(version, changed_at) -> RateCardUsed | None:
    return None if version is None else RateCardUsed(version, changed_at)


def statement_head(period: str) -> Statement:
    """The statement without its lines (`lines` empty): closed or open, when, which rate card, the
    zone. What a page shows around a stored table (apps/reports/fragments.py) reads no line."""
    bp = BillingPeriod.objects.filter(period=period).first()
    if bp is not None and bp.is_closed:
        return Statement(period=period, closed=True, lines=[], closed_at=bp.closed_at,
                         rate_card=_rate_card(bp.rate_card_version, bp.rate_card_changed_at),
                         zone=month_zone(period, {period: bp}).key)
    last = Rate.history.order_by("-history_id").values_list("history_id", "history_date").first()
    return Statement(period=period, closed=False, lines=[], rate_card=_rate_card(*last) if last else None,
                     zone=billing_zone().key)


def statement(period: str, *, shared_idle: str = "apart", head: Statement | None = None) -> Statement:
    """The month's statement. `head`: its `statement_head`, when the caller has read it."""
    result = replace(head) if head is not None else statement_head(period)
    if result.closed:
        rows = StatementLine.objects.filter(period__period=period)
        result.lines = sorted((line_from_row(r) for r in rows), key=Line.sort_key)
    else:
        result.lines = month_lines(period)
    # Rounded once, as a whole, before any view groups it; spreading hands the shown cents on
    # (docs/chargeback.md, "Rounding"). Copies: the lines may be a stored answer's.
    result.lines = assign_shown([replace(line) for line in result.lines])
    if shared_idle == "spread":
        result.lines = spread_shared_idle(result.lines)
    return result


# ---------------------------------------------------------------- lines as a statement groups them

def line_group(line: Line, group_by: str) -> tuple:
    if not line.team:
        return (UNALLOCATED_KEY, "", "", "")
    if group_by == "team":
        return (line.team, line.team, "", "")
    return (f"{line.cluster}/{line.namespace}" if line.namespace else f"{line.cluster}/(shared idle)",
            line.team, line.cluster, line.namespace)


def visible(lines: list[Line], scope) -> list[Line]:
    """Team leads see their teams' lines only; unallocated capacity is fleet-wide."""
    if scope is None:
        return lines
    return [line for line in lines if line.team and line.team in scope]


def shown_costs(lines: list[Line]) -> list[Decimal | None]:
    """The lines' costs as shown: those the statement was rounded to as a whole (`core.rounding.shown_amounts`,
    docs/chargeback.md "Rounding"); lines never on a rounded statement are rounded here, as one."""
    if any(line.shown is None and line.cost is not None for line in lines):
        return shown_amounts(lines)
    return [line.shown if line.cost is not None else None for line in lines]


# ---------------------------------------------------------------- what a closed statement stands on

def priced_closed_months(obj) -> list[str]:
    """The closed months whose statements a cluster, a team or a rate priced (sorted): their lines
    name the cluster or the team by any name it has had, or the rate was in force on one of their
    days for lines of its GPU model and price class. Such an object cannot be deleted
    (docs/chargeback.md, "History stays")."""
    from apps.clusters.models import Cluster
    from apps.teams.models import Team

    lines = StatementLine.objects.filter(period__closed_at__isnull=False)
    if isinstance(obj, (Cluster, Team)):
        names = {obj.name, *type(obj).history.filter(id=obj.pk).values_list("name", flat=True)}
        lines = lines.filter(cluster__in=names) if isinstance(obj, Cluster) else lines.filter(team__in=names)
        return sorted(set(lines.values_list("period__period", flat=True)))
    if isinstance(obj, Rate):
        following = (Rate.objects.filter(gpu_model=obj.gpu_model, mig_profile=obj.mig_profile, price_class=obj.price_class,
                                         effective_from__gt=obj.effective_from)
                     .order_by("effective_from").values_list("effective_from", flat=True).first())
        lines = lines.filter(gpu_model=obj.gpu_model, price_class=obj.price_class)
        if obj.mig_profile:         # a profile's own rate prices its instances only
            lines = lines.filter(mig_profile=obj.mig_profile)
        months = set(lines.values_list("period__period", flat=True))
        return sorted(m for m in months if obj.effective_from <= last_day(m)
                      and (following is None or following > date(int(m[:4]), int(m[5:7]), 1)))
    return []


def delete_refusals(sender, objects, **kwargs) -> list[str]:
    """`apps.web.deletes.delete_refusals` for clusters, teams and rates: why each of `objects` that
    priced a closed month may not be deleted, and what to do instead."""
    out = []
    for obj in objects:
        months = priced_closed_months(obj)
        if not months:
            continue
        what = f"{type(obj)._meta.verbose_name} {obj}"
        instead = {"cluster": "archive it instead (it stops ingesting and leaves the pickers; its history stays)",
                   "team": "keep it (rename it if need be: its statements follow it)",
                   "rate": "add a later rate to replace it from a date on"}.get(type(obj)._meta.model_name, "")
        out.append(f"{what} priced the closed month(s) {', '.join(months)}: deleting it would take history from "
                   f"under their statements; {instead}")
    return out


def watermarks_now() -> dict[str, str | None]:
    """Each cluster's ingest watermark now (name -> ISO instant or None): what a close records."""
    from apps.clusters.models import Cluster
    return {name: until.isoformat() if until else None
            for name, until in Cluster.objects.order_by("name").values_list("name", "ingested_until")}


def clusters_behind(period: str) -> list[str]:
    """Clusters whose ingest watermark has not reached the month's end: closing now would turn
    their missing hours into next month's adjustments."""
    from apps.clusters.models import Cluster
    end = period_bounds(period, billing_zone())[1]
    return sorted(c.name for c in Cluster.objects.filter(archived=False).only("name", "ingested_until")
                  if c.ingested_until is None or c.ingested_until < end)


def period_has_ended(period: str) -> bool:
    return period_bounds(period, billing_zone())[1] <= timezone.now()


__all__ = ["statement", "statement_head", "compute_open", "closing_computation", "line_group",
           "visible", "shown_costs", "UNALLOCATED_KEY", "SHARED_IDLE", "cost_by_currency", "RateCardUsed"]
