"""The rate card as the rest of the portal uses it.

- `rate_for(...)`: the hourly rate in force for a GPU on a day (quota advice prices GPUs with it).
- `price_usage_row(row)`: the cost of a `/api/v1/usage/` row, from its cells.
- `idle_share(cells)`: the idle part of usage cells, for what idle GPU-hours cost (the pages'
  "idle cost"), priced by the same `price_cells_detail`.

A usage row's cost is that of its priced hours, exactly as the chargeback statement's row
shows it, with the hours no rate covers reported beside it as `unpriced_gpu_hours` (never
priced at 0). It is null when no hour is priced, or when the lines are in more than one
currency: usage rows never sum currencies; the statement lists per-currency amounts instead.
"""
from __future__ import annotations

from dataclasses import replace
from datetime import date
from decimal import Decimal

from apps.accounting.core.lines import line_sums
from apps.accounting.core.ratecard import BASIS_PROFILE, RateCard, RateEntry, billed_cost
from apps.accounting.core.rounding import present
from apps.accounting.core.measures import shown_hours
from apps.accounting.models import Rate


def load_rate_card() -> RateCard:
    return RateCard(
        RateEntry(gpu_model=r.gpu_model, mig_profile=r.mig_profile, price_class=r.price_class,
                  hourly_rate=r.hourly_rate, currency=r.currency, effective_from=r.effective_from)
        for r in Rate.objects.all()
    )


def rate_card_at(version: int | None) -> RateCard:
    """The rate card as it stood at a change of the rate history (a closed month's
    `rate_card_version`): each rate's last record up to it, deleted rates left out."""
    latest = {}
    if version is not None:
        for h in Rate.history.filter(history_id__lte=version).order_by("history_id"):
            latest[h.id] = h
    return RateCard(RateEntry(gpu_model=h.gpu_model, mig_profile=h.mig_profile, price_class=h.price_class,
                              hourly_rate=h.hourly_rate, currency=h.currency, effective_from=h.effective_from)
                    for h in latest.values() if h.history_type != "-")


def closing_card(bp) -> RateCard:
    """The rate card a closed month (`BillingPeriod`) was closed with: what its late hours are
    priced at and what a credit for its vanished hours refunds, whatever the card says today
    (docs/accounting.md, "Late data for a closed month")."""
    return rate_card_at(bp.rate_card_version)


class BilledCard(RateCard):
    """Today's card, except on the days of a closed month, which are priced with the card that
    month was closed with: usage read day by day (the explorer) costs what its month billed,
    whatever rate was edited or backdated since (docs/chargeback.md, "Closed on every view")."""

    def __init__(self, today: RateCard, closed: dict):
        self._today, self._closed, self._cards, self._of = today, closed, {}, {}

    def _card(self, day):
        card = self._of.get(day)
        if card is None:
            period = f"{day.year:04d}-{day.month:02d}"
            bp = self._closed.get(period)
            if bp is None:
                card = self._today
            else:
                card = self._cards.get(period) or self._cards.setdefault(period, closing_card(bp))
            self._of[day] = card
        return card

    def epoch(self, day):
        card = self._card(day)
        return (id(card), card.epoch(day))

    def lookup(self, gpu_model, mig_profile, price_class, day):
        return self._card(day).lookup(gpu_model, mig_profile, price_class, day)


def billed_card(closed: dict) -> RateCard:
    """`BilledCard` of today's card and the closed months (`ledger.answer.closed_periods()`), for cells
    of true billing days only (a span cell's day is its first day)."""
    return BilledCard(load_rate_card(), closed)


def rate_for(gpu_model: str, mig_profile: str, price_class: str, day: date, *, card: RateCard | None = None) -> tuple[Decimal, str] | None:
    """(hourly rate, currency) in force on `day` (billing-zone date), or None when unpriced.

    Whole GPU (`mig_profile` ""): the model's rate per GPU-hour. A MIG profile: the profile's
    own rate per instance-hour if the card has one, else the parent model's rate per GPU-hour
    (multiply by the instance's fraction for an instance-hour; `rate_basis_for` tells which).
    `price_class` is one of PRICE_CLASSES (a node's is its first matching NodePool's, see
    `usage.price_classes.price_class_expr`). The card is portal-wide. Pass `card=load_rate_card()` to price many
    GPUs with one query.
    """
    card = card or load_rate_card()
    found = card.lookup(gpu_model, mig_profile or "", price_class, day)
    if found is None:
        return None
    entry, _basis = found
    return entry.hourly_rate, entry.currency


def rate_basis_for(gpu_model: str, mig_profile: str, price_class: str, day: date,
                   card: RateCard | None = None) -> str | None:
    """`mig_profile` (per instance-hour), `gpu_model` (per GPU-hour) or None (unpriced)."""
    found = (card or load_rate_card()).lookup(gpu_model, mig_profile or "", price_class, day)
    return found[1] if found else None


def price_cells_detail(cells, card: RateCard | None = None, *, unallocated: bool = False
                       ) -> tuple[Decimal | None, str | None, Decimal]:
    """(exact cost of the priced allocated cells, their currency, unpriced allocated GPU-seconds).

    The cost is the sum of the statement lines' costs (`line_sums`, rate × billed seconds per
    line), so a usage row and the statement's row agree to the cent. Cost and currency are
    None when nothing is priced or when currencies are mixed. `unallocated=True` prices the
    capacity no pod held instead (the statement's unallocated lines)."""
    costs, unpriced_seconds = price_cells_by_currency(cells, card, unallocated=unallocated)
    if len(costs) != 1:
        return None, None, unpriced_seconds
    [(currency, cost)] = costs.items()
    return cost, currency, unpriced_seconds


def price_cells_by_currency(cells, card: RateCard | None = None, *, unallocated: bool = False
                            ) -> tuple[dict[str, Decimal], Decimal]:
    """({currency: exact cost of the priced allocated cells}, unpriced allocated GPU-seconds):
    `price_cells_detail` without giving up on several currencies (the month-end forecast
    projects each currency of a team on its own, docs/forecast.md)."""
    sums = line_sums([c for c in cells if bool(c.namespace) != unallocated], card or load_rate_card())
    costs: dict[str, Decimal] = {}
    unpriced_seconds = Decimal(0)
    for (_k, _t, _c, _n, _m, _p, _pc, _basis, rate, currency), (allocated, _used, billed) in sums.items():
        if rate is None:
            unpriced_seconds += allocated
        else:
            costs[currency] = costs.get(currency, Decimal(0)) + billed_cost(rate, billed)
    return costs, unpriced_seconds


def idle_share(cells) -> list:
    """The idle part of allocated usage cells, as cells of their own (docs/figures.md, "Idle
    cost"): idle GPU-seconds in place of allocated ones, the MIG instance-seconds in the same
    proportion, nothing used. Priced by `price_cells_detail`, an idle hour costs exactly what
    an allocated hour of the same line costs."""
    out = []
    for c in cells:
        if not c.namespace or not c.idle_gpu_seconds or not c.gpu_seconds:
            continue
        part = c.idle_gpu_seconds / c.gpu_seconds
        out.append(replace(c, gpu_seconds=c.idle_gpu_seconds, used_gpu_seconds=0.0, mig_seconds=c.mig_seconds * part))
    return out


def price_cells(cells, card: RateCard | None = None) -> tuple[Decimal | None, str | None]:
    cost, currency, _ = price_cells_detail(cells, card)
    return cost, currency


def price_usage_row(row) -> tuple[str | None, str | None]:
    cost, currency = price_cells(row.cells)
    return present(cost, currency), currency


def price_usage_rows_detail(rows, card: RateCard | None = None) -> list[tuple[str | None, str | None, float]]:
    """(cost in the currency's minor unit, currency, unpriced GPU-hours) per row, with one rate-card query."""
    card = card or load_rate_card()
    out = []
    for row in rows:
        cost, currency, unpriced_seconds = price_cells_detail(row.cells, card)
        out.append((present(cost, currency), currency, shown_hours(unpriced_seconds)))
    return out


__all__ = ["rate_for", "rate_basis_for", "price_usage_row", "price_usage_rows_detail",
           "price_cells", "price_cells_detail", "price_cells_by_currency", "idle_share", "load_rate_card",
           "rate_card_at", "closing_card", "billed_card", "BilledCard", "BASIS_PROFILE", "rates_in_force"]


def rates_in_force(today) -> tuple[list, list]:
    """(the rate in force on `today` per model, MIG profile and price class; the rates dated
    after it), each in that order: what the Rates page lists (docs/pages.md)."""
    current, upcoming = {}, []
    for rate in Rate.objects.order_by("gpu_model", "mig_profile", "price_class", "effective_from"):
        if rate.effective_from <= today:
            current[(rate.gpu_model, rate.mig_profile, rate.price_class)] = rate
        else:
            upcoming.append(rate)
    return list(current.values()), upcoming
