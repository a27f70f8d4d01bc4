"""Usage as billed: a window's usage with the days of closed months as their close billed them
(docs/chargeback.md, "Windows across a close").

The one rule every view that shows money beside usage reads a window by — the overview, the team
page, `/api/v1/usage/` and the explorer, over a whole month or any other window:

1. The window is cut into billing days (`BILLING_TIMEZONE`). A day whose month is open is live
   usage, attributed and priced as it stands now (`usage.cells.usage_cells`, today's rate card).
2. A whole day of a closed month is that month's **frozen day**: the cells its close froze for
   that date (`ledger.frozen`), with the team and price class the close booked them under and the
   allocated, used, idle and MIG seconds its statement priced (idle: the idle seconds of those
   hours as the close read them). Hours that arrived after the close are not in it: they are
   billed in a later month (`ledger.money.late_hours` says how many, and where).
3. A part of a day of a closed month (a window that starts or ends at another instant than a
   midnight) has no frozen figures: its live hours are read as the month's close attributed
   hours (`ledger.answer.as_closed`: label history, label trust, claims, teams and node pools as
   they stood at the close), as the month's late data is. So are the hourly rows of a closed day
   (`billed_hour_cells`): a frozen day has no hours.
4. Every cell is priced with `billed_card()`: a day of a closed month at the rate card that month
   was closed with (`pricing.rates.BilledCard`), any other day at today's.

A window of open months only is read exactly as before (`window_cells` for a whole month).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta


from apps.accounting.calendar.zone import billing_zone, day_start
from apps.accounting.core.lines import Cell
from apps.accounting.core.periods import period_of
from apps.accounting.core.ratecard import RateCard
from apps.accounting.ledger.answer import as_closed, closed_periods, window_cells
from apps.accounting.ledger.frozen import month_cells
from apps.accounting.models import BillingPeriod
from apps.accounting.pricing.rates import billed_card as _billed_card
from apps.accounting.usage import reader as rollup_reader
from apps.accounting.usage.cells import UsageFilter, usage_cells
from apps.accounting.usage.reader import HourTeams


@dataclass(frozen=True)
class Piece:
    """A stretch of the window read one way: live (`bp` None), or of the closed month `bp` —
    frozen (`whole`: whole billing days, `days` them) or live as of its close (part of a day)."""
    start: datetime
    end: datetime
    bp: BillingPeriod | None = None
    whole: bool = False
    days: tuple[date, ...] = ()


def pieces(f: UsageFilter, closed: dict[str, BillingPeriod] | None = None) -> list[Piece]:
    """The window cut by the rule above, in time order; consecutive open days are one piece."""
    closed = closed_periods() if closed is None else closed
    zone = billing_zone()
    out: list[Piece] = []
    day = f.start.astimezone(zone).date()
    while True:
        begins, ends = day_start(day, zone), day_start(day + timedelta(days=1), zone)
        a, b = max(f.start, begins), min(f.end, ends)
        if a >= f.end:
            break
        if a < b:
            bp = closed.get(period_of(day))
            whole = a == begins and b == ends
            last = out[-1] if out else None
            if bp is None and last is not None and last.bp is None:
                out[-1] = replace(last, end=b)
            elif bp is not None and whole and last is not None and last.bp is bp and last.whole:
                out[-1] = replace(last, end=b, days=(*last.days, day))
            else:
                out.append(Piece(a, b, bp, bp is not None and whole, (day,) if bp is not None and whole else ()))
        day += timedelta(days=1)
    return out


def crosses_a_close(f: UsageFilter, closed: dict[str, BillingPeriod] | None = None) -> bool:
    """Whether any day of the window is in a closed month."""
    return any(p.bp is not None for p in pieces(f, closed))


def billed_cells(f: UsageFilter, *, per_day: bool = True) -> list[Cell]:
    """The window's usage cells as billed (the rule above). `per_day=False`: the open pieces as
    span cells (`usage_cells(per_day=False)`; a whole open month from its stored cells); a closed
    month's days are always day cells (each is priced by its own date)."""
    cut = pieces(f)
    if all(p.bp is None for p in cut):
        return usage_cells(f) if per_day else window_cells(f)
    cells: list[Cell] = []
    for p in cut:
        part = replace(f, start=p.start, end=p.end)
        if p.bp is None:
            cells += usage_cells(part, per_day=per_day)
        elif not p.whole:
            with as_closed(p.bp):
                cells += usage_cells(part)
        else:
            cells += _frozen_days(part, p)
    return cells


def billed_hour_cells(f: UsageFilter) -> list[dict]:
    """Allocated usage per hour (`usage.reader.hour_cells`), the hours of closed months attributed as
    their close attributed hours (rule 3: a frozen day has no hours)."""
    rows: list[dict] = []
    for p in pieces(f):
        part = replace(f, start=p.start, end=p.end)
        if p.bp is None:
            rows += rollup_reader.hour_cells(part, HourTeams())
        else:
            with as_closed(p.bp):
                rows += rollup_reader.hour_cells(part, HourTeams())
    return rows


def billed_card() -> RateCard:
    """The card the cells above are priced with: a closed month's days at its closing card (rule 4)."""
    return _billed_card(closed_periods())


def _frozen_days(f: UsageFilter, p: Piece) -> list[Cell]:
    """The frozen cells of the closed month's whole days `p.days` that `f` selects, with the idle
    seconds the close froze with them."""
    from apps.clusters.models import Cluster

    clusters = set(Cluster.objects.filter(name=f.cluster).values_list("id", flat=True)) if f.cluster else None
    out = []
    for _period, _booked, c in month_cells(p.bp, "own", p.days[0], p.days[-1]):
        if (clusters is not None and c.cluster_id not in clusters) \
                or (f.namespaces is not None and c.namespace not in f.namespaces) \
                or (f.gpu_models is not None and c.gpu_model not in f.gpu_models) \
                or (f.teams is not None and (not c.namespace or c.team not in f.teams)):
            continue
        out.append(c)
    return out


__all__ = ["Piece", "pieces", "crosses_a_close", "billed_cells", "billed_hour_cells", "billed_card"]
