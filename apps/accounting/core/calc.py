"""Pure money math for chargeback: a line's cost (docs/figures.md), shared idle cost, billing periods.

Plain dataclasses in and out, no Django: every figure here is pinned by hand-computed tests.
Money is `Decimal` throughout and rounded, to the currency's own minor unit (JPY 1, USD 0.01,
KWD 0.001; docs/dates-and-money.md), only by `present` / `round_to_total`.

Cost of a usage cell = billed hours × the rate in force on the cell's billing-zone day for
its (GPU model, MIG profile, price class):
- a whole GPU, or a MIG instance whose profile has no rate of its own: the model's rate per
  GPU-hour × allocated GPU-hours (MIG GPU-seconds already carry the fraction, so this *is*
  "parent rate × fraction × instance-hours");
- a MIG instance whose profile has a rate: that rate × instance-hours (raw MIG seconds).
No rate → the line is unpriced: cost None, never 0.
"""
from __future__ import annotations

import calendar
import re
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from datetime import date, datetime, time
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal
from math import fsum
from zoneinfo import ZoneInfo

from apps.accounting.core.currencies import minor_unit
from apps.accounting.core.measures import efficiency
from apps.accounting.calendar.dates import MAX_YEAR, MIN_YEAR, YEARS_TEXT
SECONDS_PER_HOUR = Decimal(3600)
BASIS_PROFILE = "mig_profile"
BASIS_MODEL = "gpu_model"
SECONDS_EPSILON = 1e-6  # a float difference smaller than this is no late data


# ---------------------------------------------------------------- rates

@dataclass(frozen=True)
class RateEntry:
    gpu_model: str
    mig_profile: str
    price_class: str
    hourly_rate: Decimal
    currency: str
    effective_from: date


class RateCard:
    """Look-ups of the rate in force on a day; built once per report from all rates."""

    def __init__(self, entries):
        by_key = defaultdict(list)
        for e in entries:
            by_key[(e.gpu_model, e.mig_profile, e.price_class)].append(e)
        self._entries = {k: sorted(v, key=lambda e: e.effective_from) for k, v in by_key.items()}
        self._dates = {k: [e.effective_from for e in v] for k, v in self._entries.items()}
        self._all_dates = sorted({e.effective_from for v in self._entries.values() for e in v})

    def epoch(self, day) -> int:
        """Which stretch of the card `day` lies in: two days of the same epoch (no rate takes
        effect after the first and on or before the second) have the same rate for every key."""
        return bisect_right(self._all_dates, day)

    def _in_force(self, key, day):
        dates = self._dates.get(key)
        if not dates:
            return None
        i = bisect_right(dates, day) - 1
        return self._entries[key][i] if i >= 0 else None

    def lookup(self, gpu_model, mig_profile, price_class, day):
        """(RateEntry, basis) or None: the profile's own rate first, else the parent model's."""
        if mig_profile:
            entry = self._in_force((gpu_model, mig_profile, price_class), day)
            if entry is not None:
                return entry, BASIS_PROFILE
        entry = self._in_force((gpu_model, "", price_class), day)
        return (entry, BASIS_MODEL) if entry is not None else None


def billed_cost(hourly_rate: Decimal, billed_seconds: Decimal) -> Decimal:
    """The exact cost of a line: its rate × its billed hours (unrounded)."""
    return hourly_rate * billed_seconds / SECONDS_PER_HOUR


def to_decimal(seconds: float) -> Decimal:
    """A float of seconds as the Decimal it prints as (no binary-expansion noise)."""
    return Decimal(repr(float(seconds)))


# ---------------------------------------------------------------- cells and lines

@dataclass(slots=True)
class Cell:
    """Seconds for one (cluster, namespace, team, model, profile, price class, billing day): the
    one usage cell every part of accounting reads — live usage (`usage.usage_cells`), stored
    month answers, the frozen cells of a closed month and late data. A day split by a re-label
    has a cell per team. `day` is the span's first day for cells merged over days."""
    cluster_id: int
    cluster: str
    namespace: str          # "" = unallocated capacity
    team: str
    gpu_model: str
    mig_profile: str
    day: date
    gpu_seconds: float = 0.0
    used_gpu_seconds: float = 0.0
    idle_gpu_seconds: float = 0.0
    mig_seconds: float = 0.0
    price_class: str = "on_demand"   # from the node pool of the node the device sits on

    @property
    def allocated(self) -> bool:
        return bool(self.namespace)


@dataclass
class Line:
    kind: str                      # usage | unallocated | adjustment | shared_idle
    team: str
    cluster: str
    namespace: str
    gpu_model: str
    mig_profile: str
    price_class: str
    rate_basis: str                # mig_profile | gpu_model | "" (unpriced)
    hourly_rate: Decimal | None
    currency: str                  # "" when unpriced
    allocated_gpu_seconds: Decimal = Decimal(0)
    used_gpu_seconds: Decimal = Decimal(0)
    billed_seconds: Decimal = Decimal(0)
    adjusts_period: str = ""
    fixed_cost: Decimal | None = None   # shared-idle lines carry a cost, not a rate
    # The cost as every view shows it, in the currency's minor unit (`assign_shown`); None until
    # the statement it is on is rounded, and for an unpriced line.
    shown: Decimal | None = field(default=None, compare=False, repr=False)

    @property
    def priced(self) -> bool:
        return self.hourly_rate is not None or self.fixed_cost is not None

    @cached_property
    def cost(self) -> Decimal | None:
        """Worked out once: a statement asks each line's cost several times (its rows, its totals)."""
        if self.fixed_cost is not None:
            return self.fixed_cost
        if self.hourly_rate is None:
            return None
        return billed_cost(self.hourly_rate, self.billed_seconds)

    @property
    def efficiency(self) -> float | None:
        return efficiency(self.used_gpu_seconds, self.allocated_gpu_seconds)

    def sort_key(self):
        return (self.team, self.kind != "usage", self.adjusts_period, self.cluster, self.namespace,
                self.gpu_model, self.mig_profile, self.price_class, self.currency, self.hourly_rate or 0)


LineKey = tuple  # (kind, team, cluster, namespace, model, profile, price class, basis, rate, currency)


def line_sums(cells, card: RateCard, *, kind_allocated="usage", kind_unallocated="unallocated") -> dict:
    """Line key → the correctly rounded sums (`math.fsum`) of its cells' allocated, used and
    billed seconds, as Decimals: the same figures whatever order or grain (days or spans) the
    cells come in. The one place cells are matched to the rate in force."""
    found_for: dict[tuple, tuple] = {}
    acc: dict[LineKey, list] = {}
    for c in cells:
        rate_key = (c.gpu_model, c.mig_profile, c.price_class, c.day)
        found = found_for.get(rate_key)
        if found is None:
            hit = card.lookup(*rate_key)
            found = found_for[rate_key] = hit if hit else (None, "")
        entry, basis = found
        kind = kind_allocated if c.namespace else kind_unallocated
        key = (kind, c.team if c.namespace else "", c.cluster, c.namespace, c.gpu_model, c.mig_profile,
               c.price_class, basis, entry.hourly_rate if entry else None, entry.currency if entry else "")
        lists = acc.get(key)
        if lists is None:
            lists = acc[key] = ([], [], [])
        lists[0].append(c.gpu_seconds)
        lists[1].append(c.used_gpu_seconds)
        lists[2].append(c.mig_seconds if basis == BASIS_PROFILE else c.gpu_seconds)
    return {key: (to_decimal(fsum(g)), to_decimal(fsum(u)), to_decimal(fsum(b))) for key, (g, u, b) in acc.items()}


def build_lines(cells, card: RateCard, *, kind_allocated="usage", kind_unallocated="unallocated",
                adjusts_period="") -> list[Line]:
    """Aggregate cells into statement lines: one per team × cluster × namespace × model ×
    profile × price class × rate in force (a mid-month rate change gives two lines)."""
    sums = line_sums(cells, card, kind_allocated=kind_allocated, kind_unallocated=kind_unallocated)
    lines = [
        Line(kind=kind, team=team, cluster=cluster, namespace=ns, gpu_model=model, mig_profile=profile,
             price_class=price_class, rate_basis=basis, hourly_rate=rate, currency=currency,
             adjusts_period=adjusts_period, allocated_gpu_seconds=gpu, used_gpu_seconds=used, billed_seconds=billed)
        for (kind, team, cluster, ns, model, profile, price_class, basis, rate, currency), (gpu, used, billed)
        in sums.items()
    ]
    return sorted(lines, key=Line.sort_key)


def cost_by_currency(lines) -> dict[str, Decimal]:
    totals: dict[str, Decimal] = defaultdict(Decimal)
    for line in lines:
        if line.cost is not None:
            totals[line.currency] += line.cost
    return dict(sorted(totals.items()))


# ---------------------------------------------------------------- shared idle cost

def spread_shared_idle(lines: list[Line]) -> list[Line]:
    """Spread unallocated cost over teams in proportion to their allocated cost, per cluster,
    GPU model and currency. Unallocated cost with no team to carry it (nobody used
    that model there) stays as an unallocated line; unpriced unallocated hours stay too."""
    team_cost = defaultdict(lambda: defaultdict(Decimal))   # (cluster, model, currency) -> team -> cost
    idle_cost = defaultdict(Decimal)
    idle_shown = defaultdict(Decimal)     # the same lines' shown costs, when they are rounded
    rounded = True
    kept = []
    for line in lines:
        group = (line.cluster, line.gpu_model, line.currency)
        if line.kind == "usage" and line.cost is not None:
            team_cost[group][line.team] += line.cost
        if line.kind == "unallocated" and line.cost is not None:
            idle_cost[group] += line.cost
            idle_shown[group] += line.shown or Decimal(0)
            rounded = rounded and line.shown is not None
    spread_groups = {g for g, c in idle_cost.items() if sum(team_cost[g].values(), Decimal(0)) > 0}
    for line in lines:
        group = (line.cluster, line.gpu_model, line.currency)
        if line.kind == "unallocated" and line.cost is not None and group in spread_groups:
            continue
        kept.append(line)
    for group in sorted(spread_groups):
        cluster, model, currency = group
        teams = sorted(team_cost[group].items())
        total = sum((cost for _, cost in teams), Decimal(0))
        shares = [idle_cost[group] * cost / total for _, cost in teams]
        # Rounded lines hand their shown cents on, split by largest remainder: spreading moves
        # money between rows and never changes the total (docs/chargeback.md, "Rounding").
        shown = apportion(idle_shown[group], shares, currency) if rounded else [None] * len(teams)
        for (team, _), share, amount in zip(teams, shares, shown):
            kept.append(Line(kind="shared_idle", team=team, cluster=cluster, namespace="", gpu_model=model,
                             mig_profile="", price_class="", rate_basis="", hourly_rate=None, currency=currency,
                             fixed_cost=share, shown=amount))
    return sorted(kept, key=Line.sort_key)


# ---------------------------------------------------------------- presentation

def present(amount: Decimal | None, currency: str) -> str | None:
    """Money as shown: a decimal string rounded half-up to the currency's minor unit
    ("1234" yen, "12.35" dollars, "1.235" dinars)."""
    if amount is None:
        return None
    return str(amount.quantize(minor_unit(currency), rounding=ROUND_HALF_UP))


def round_to_total(amounts: list[Decimal], currency: str) -> list[Decimal]:
    """Round each amount to the currency's minor unit so that the rounded amounts add up to the
    rounded total.

    Largest remainder: every amount is floored to the unit, then the units still missing go to
    the amounts that lost most. Each shown amount is within one unit (a cent, a yen, a fils) of
    its exact value and the shown lines sum to the shown total.
    """
    if not amounts:
        return []
    target = sum(amounts, Decimal(0)).quantize(minor_unit(currency), rounding=ROUND_HALF_UP)
    return apportion(target, amounts, currency)


def shown_amounts(lines: list[Line]) -> list[Decimal | None]:
    """Every line's cost as shown, rounded once for the whole statement (docs/chargeback.md,
    "Rounding"). Per currency, the exact total of all lines is rounded half-up to the minor
    unit; that total is split over the teams (unallocated capacity is one more), each team's
    part over its namespaces (team × cluster × namespace; unallocated capacity per cluster),
    and each namespace's part over its lines — every split by largest remainder (`apportion`).
    So every view that adds shown lines up — by team, by namespace, the CSV, the workbook, the
    FOCUS rows — gives the same total and the same figure per team and per namespace, each
    within one minor unit of its exact cost. None for an unpriced line."""
    out: list[Decimal | None] = [None] * len(lines)
    by_currency: dict[str, list[int]] = defaultdict(list)
    for i, line in enumerate(lines):
        if line.cost is not None:
            by_currency[line.currency].append(i)
    for currency, idx in by_currency.items():
        target = sum((lines[i].cost for i in idx), Decimal(0)).quantize(minor_unit(currency), rounding=ROUND_HALF_UP)
        _split(target, idx, lines, currency, _LEDGER_LEVELS, out)
    return out


_LEDGER_LEVELS = (lambda line: line.team, lambda line: (line.team, line.cluster, line.namespace))


def _split(target: Decimal, idx: list[int], lines: list[Line], currency: str, levels, out: list) -> None:
    if not levels:
        for i, amount in zip(idx, apportion(target, [lines[i].cost for i in idx], currency)):
            out[i] = amount
        return
    groups: dict = defaultdict(list)
    for i in idx:
        groups[levels[0](lines[i])].append(i)
    keys = sorted(groups)
    parts = apportion(target, [sum((lines[i].cost for i in groups[k]), Decimal(0)) for k in keys], currency)
    for key, part in zip(keys, parts):
        _split(part, groups[key], lines, currency, levels[1:], out)


def assign_shown(lines: list[Line]) -> list[Line]:
    """Round a whole statement's lines once (`shown_amounts`), setting each line's `shown`."""
    for line, amount in zip(lines, shown_amounts(lines)):
        line.shown = amount
    return lines


def ensure_shown(lines: list[Line]) -> list[Line]:
    """`assign_shown` unless every priced line already carries its shown cost."""
    if any(line.shown is None and line.cost is not None for line in lines):
        assign_shown(lines)
    return lines


def apportion(target: Decimal, amounts: list[Decimal], currency: str) -> list[Decimal]:
    """Split `target` (a whole number of the currency's minor units) over `amounts`, in
    proportion to them: the parts sum to `target` exactly (`round_to_total` with the total given).

    The FOCUS export splits a statement line's shown cost over its days this way, so the days
    add up to the line to the minor unit (docs/chargeback.md, "FOCUS export"). Largest
    remainder: floors first; the units still missing go to the amounts that lost most (should
    the target be further off than one unit per amount, round and round again); a target below
    the floors takes units back from the amounts that lost least.
    """
    if not amounts:
        return []
    unit = minor_unit(currency)
    floors = [a.quantize(unit, rounding=ROUND_FLOOR) for a in amounts]
    missing = int((target - sum(floors, Decimal(0))) / unit)
    order = sorted(range(len(amounts)), key=lambda i: (-(amounts[i] - floors[i]), i))
    if missing < 0:
        order.reverse()
    out = list(floors)
    for k in range(abs(missing)):
        out[order[k % len(order)]] += unit if missing > 0 else -unit
    return out


# ---------------------------------------------------------------- billing periods

PERIOD_RE = re.compile(r"(\d{4})-(\d{2})", re.ASCII)


def _year_month(period: str) -> tuple[int, int]:
    """(year, month) of 'YYYY-MM' with a year in 2000-2100; ValueError naming the period else."""
    m = PERIOD_RE.fullmatch(period or "") if isinstance(period, str) else None
    if not m or not 1 <= int(m.group(2)) <= 12:
        shown = period if not isinstance(period, str) or len(period) <= 20 else period[:20] + "…"
        raise ValueError(f"period={shown!r} is not a month like 2026-03 (YYYY-MM)")
    year = int(m.group(1))
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise ValueError(f"period={period!r} is out of range: the portal accepts {YEARS_TEXT}")
    return year, int(m.group(2))


def parse_period(text: str) -> str:
    year, month = _year_month(text)
    return f"{year:04d}-{month:02d}"


def period_bounds(period: str, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """[start, end) of a calendar month in the billing zone, as aware datetimes."""
    year, month = _year_month(period)
    start = datetime.combine(date(year, month, 1), time(0), tzinfo=zone)
    end_day = date(year + month // 12, month % 12 + 1, 1)
    return start, datetime.combine(end_day, time(0), tzinfo=zone)


def period_of(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


def next_period(period: str) -> str:
    year, month = int(period[:4]), int(period[5:7])
    return f"{year + month // 12:04d}-{month % 12 + 1:02d}"


def prev_period(period: str) -> str:
    year, month = int(period[:4]), int(period[5:7])
    return f"{year - (month == 1):04d}-{(month - 2) % 12 + 1:02d}"


def last_day(period: str) -> date:
    year, month = int(period[:4]), int(period[5:7])
    return date(year, month, calendar.monthrange(year, month)[1])
