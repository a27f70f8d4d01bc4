"""A month's chargeback as the data a FOCUS export is cut from (docs/chargeback.md, "FOCUS export").

Per statement line, its figures day by day: the statement says what a line costs, the usage
cells it was priced from say how its hours fall on the days. The FOCUS columns themselves — the
presentation — are written by `apps/reports/focus_csv.py`.

- Open month: the statement's lines (`ledger.answer.month_lines`, the stored month answer every
  surface reads), and per line its day figures from the month's per-day cells (the cells
  closing would freeze; they give the same lines, `core.lines.line_sums` sums either grain exactly)
  and the closed months' late-data cells.
- Closed month: the frozen lines, and the frozen cells booked in that month (its own and its
  adjustments), matched to the lines with the rate card in force when it was closed, in the
  zone it was closed in.
- Shared idle spread over teams (`shared_idle_days`): each team's spread share of a cluster's
  unallocated capacity, split over the capacity's own days (docs/chargeback.md, "Split costs in
  FOCUS 1.3").
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import ROUND_FLOOR, Decimal
from zoneinfo import ZoneInfo


from apps.accounting.core.lines import Line, line_sums
from apps.accounting.core.ratecard import RateCard, billed_cost
from apps.accounting.core.rounding import apportion, ensure_shown
from apps.accounting.core.shared_idle import spread_shared_idle
from apps.accounting.ledger.frozen import month_cells
from apps.accounting.models import BillingPeriod
from apps.accounting.ledger.answer import (closed_before, closed_periods, month_late_cells, month_lines,
                                           month_zone, own_days, zone_edge_cells)
from apps.accounting.pricing.rates import closing_card, load_rate_card, rate_card_at
from apps.accounting.ledger.statements import statement


@dataclass(frozen=True)
class DayFigures:
    day: date | None        # None: the line's whole period (a line no day figures were found for)
    allocated_gpu_seconds: Decimal
    used_gpu_seconds: Decimal
    billed_seconds: Decimal


@dataclass
class FocusMonth:
    period: str
    closed: bool
    lines: list[Line]
    days: dict[tuple, list[DayFigures]]     # line_key(line) -> its days, in order
    zone: ZoneInfo                          # the month's own (`ledger.answer.month_zone`): a closed month's close zone
    adjusted_zones: dict = field(default_factory=dict)   # corrected month -> its own zone (its close's)


# ---------------------------------------------------------------- the day figures of each line

def line_key(line: Line) -> tuple:
    return (line.adjusts_period, line.kind, line.team, line.cluster, line.namespace, line.gpu_model,
            line.mig_profile, line.price_class, line.rate_basis, line.hourly_rate, line.currency)


def day_figures(cells, card: RateCard, *, adjusts_period: str = "") -> dict[tuple, list[DayFigures]]:
    """Per statement line (as `line_key`), its figures day by day: `core.lines.line_sums` over each
    day's cells, so a day is priced and keyed exactly as the line is."""
    kinds = {"kind_allocated": "adjustment", "kind_unallocated": "adjustment"} if adjusts_period else {}
    by_day = defaultdict(list)
    for c in cells:
        by_day[c.day].append(c)
    out: dict[tuple, list[DayFigures]] = defaultdict(list)
    for day in sorted(by_day):
        for key, (allocated, used, billed) in line_sums(by_day[day], card, **kinds).items():
            out[(adjusts_period, *key)].append(DayFigures(day, allocated, used, billed))
    return out


def focus_month(period: str) -> FocusMonth:
    bp = BillingPeriod.objects.filter(period=period, closed_at__isnull=False).first()
    if bp is None:
        card = load_rate_card()
        closed = closed_periods()
        days = day_figures(own_days(period) + zone_edge_cells(period, closed, per_day=True), card)
        for earlier in closed_before(period, closed):
            days.update(day_figures(month_late_cells(earlier, closed[earlier]), closing_card(closed[earlier]),
                                    adjusts_period=earlier))
        return FocusMonth(period=period, closed=False, lines=month_lines(period), days=days,
                          zone=month_zone(period, closed), adjusted_zones=_zones(closed))
    card = rate_card_at(bp.rate_card_version)
    booked = defaultdict(list)
    # Read in chunks (a server-side cursor on Postgres): the rows are never all held as well as the cells.
    for usage_period, _booked, cell in month_cells(bp, "booked"):
        booked[usage_period].append(cell)
    days = day_figures(booked.pop(period, []), card)
    closed = closed_periods()
    for earlier, cells in booked.items():
        # Priced with the card the corrected month was closed with, as its adjustment lines were
        # (docs/accounting.md); a month it booked that is open again falls back to this month's.
        days.update(day_figures(cells, closing_card(closed[earlier]) if earlier in closed else card,
                                adjusts_period=earlier))
    return FocusMonth(period=period, closed=True, lines=statement(period).lines, days=days,
                      zone=month_zone(period, {period: bp}), adjusted_zones=_zones(closed))


def _zones(closed: dict) -> dict[str, ZoneInfo]:
    """Each closed month's own zone, the zone its corrections' days are in (`ledger.answer.month_zone`)."""
    return {p: month_zone(p, closed) for p in closed}




# ---------------------------------------------------------------- shared idle, spread, day by day

RATIO_PLACES = Decimal("0.000001")


@dataclass(frozen=True)
class SharedDay:
    """One team's part of one day of a cluster's unallocated capacity, spread over the teams
    (docs/chargeback.md, "Split costs in FOCUS 1.3")."""
    origin: Line            # the unallocated capacity line whose cost is split (the origin charge)
    day: DayFigures         # its figures that day
    ratio: Decimal          # the team's share of the origin charge, exact
    shown_ratio: Decimal    # the same to 6 places; a group's teams' shown ratios add up to 1 exactly
    cost: Decimal           # the team's part of that day, in the currency's minor unit


def spread_lines(month: FocusMonth) -> list[Line]:
    """The month's lines with shared idle spread over the teams, as the statement with
    `shared_idle=spread` has them (rounded once, then spread: `ledger.statements.statement`)."""
    return spread_shared_idle(ensure_shown([replace(line) for line in month.lines]))


def shared_idle_days(month: FocusMonth, spread: list[Line]) -> dict[tuple, list[SharedDay]]:
    """Per `shared_idle` line of `spread` (as `line_key`), its parts day by day.

    A team's share of a group (cluster × GPU model × currency) is its allocated cost ÷ the
    group's (`core.shared_idle.spread_shared_idle`); every origin day of the group (each unallocated line of
    the group and each of its days) gives the team that share of its exact cost, and the team's
    shown spread amount is split over those parts by largest remainder, so a team's rows add up
    to the statement's shared-idle line to the minor unit."""
    groups: dict[tuple, list[Line]] = defaultdict(list)
    for line in spread:
        if line.kind == "shared_idle":
            groups[(line.cluster, line.gpu_model, line.currency)].append(line)
    origins: dict[tuple, list[tuple[Line, DayFigures, Decimal]]] = defaultdict(list)
    for line in month.lines:
        group = (line.cluster, line.gpu_model, line.currency)
        if line.kind != "unallocated" or line.hourly_rate is None or group not in groups:
            continue
        days = month.days.get(line_key(line)) or [DayFigures(None, line.allocated_gpu_seconds,
                                                             line.used_gpu_seconds, line.billed_seconds)]
        origins[group] += [(line, d, billed_cost(line.hourly_rate, d.billed_seconds)) for d in days]
    out: dict[tuple, list[SharedDay]] = {}
    for group, teams in groups.items():
        total = sum((t.fixed_cost for t in teams), Decimal(0))
        ratios = [t.fixed_cost / total if total else Decimal(1) / len(teams) for t in teams]
        for team, ratio, shown_ratio in zip(teams, ratios, ratios_to_places(ratios)):
            parts = apportion(team.shown, [cost * ratio for _, _, cost in origins[group]], team.currency)
            out[line_key(team)] = [SharedDay(origin, day, ratio, shown_ratio, cost)
                                   for (origin, day, _), cost in zip(origins[group], parts)]
    return out


def ratios_to_places(ratios: list[Decimal]) -> list[Decimal]:
    """Ratios that add up to 1, written to 6 places so that they still do (largest remainder)."""
    floors = [r.quantize(RATIO_PLACES, rounding=ROUND_FLOOR) for r in ratios]
    missing = int((1 - sum(floors, Decimal(0))) / RATIO_PLACES)
    order = sorted(range(len(ratios)), key=lambda i: (-(ratios[i] - floors[i]), i))
    for k in range(max(missing, 0)):
        floors[order[k % len(order)]] += RATIO_PLACES
    return floors
