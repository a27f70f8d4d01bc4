"""Money beside usage on the pages: the cost and the idle cost of a group of usage cells.

Every amount comes from the one pricing definition (`apps.accounting.pricing.rates`:
`price_cells_detail`, `idle_share`; docs/figures.md "Cost"), so a page's cost and the
chargeback statement's agree to the cent. Pages show them only to roles that may see money
(`ReportFilter.money`), and format them with the `money` / `cost_text` filters.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal

from apps.accounting.core.ratecard import RateCard
from apps.accounting.core.rounding import apportion, present
from apps.accounting.core.currencies import minor_unit
from apps.accounting.core.measures import gpu_hours
from apps.accounting.pricing.rates import idle_share, load_rate_card, price_cells_detail



@dataclass(frozen=True)
class Priced:
    cost: Decimal | None            # exact; None: nothing priced, or several currencies
    idle_cost: Decimal | None       # what the idle GPU-hours among them cost
    currency: str | None
    unpriced_gpu_hours: float       # allocated hours no rate covers (never priced at 0)
    mixed: bool = False             # priced in more than one currency: no single sum

    @property
    def unpriced(self) -> bool:
        return self.unpriced_gpu_hours > 0


NOTHING = Priced(None, None, None, 0.0)


def price(cells, card: RateCard, *, unallocated: bool = False) -> Priced:
    """Cost and idle cost of `cells` (of the unallocated ones with `unallocated=True`: capacity
    is never idle cost, it has no pod)."""
    cells = list(cells)
    if not cells:
        return NOTHING
    cost, currency, unpriced_s = price_cells_detail(cells, card, unallocated=unallocated)
    idle_cost = None
    if not unallocated:
        idle_cost, idle_currency, _ = price_cells_detail(idle_share(cells), card)
        if idle_cost is None and cost is not None:
            idle_cost = Decimal(0)            # nothing idle: it cost nothing
        elif idle_currency != currency:
            idle_cost = None
    priced_any = any(c.namespace if not unallocated else not c.namespace for c in cells)
    mixed = cost is None and priced_any and gpu_hours(float(unpriced_s)) < _hours(cells, unallocated) - 1e-9
    return Priced(cost, idle_cost, currency, gpu_hours(float(unpriced_s)), mixed)


def _hours(cells, unallocated: bool) -> float:
    return gpu_hours(sum(c.gpu_seconds for c in cells if bool(c.namespace) != unallocated))


def price_groups(groups, *, unallocated: bool = False, card: RateCard | None = None) -> list[Priced]:
    """`price` of each group of cells with one read of the rate card."""
    card = card or load_rate_card()
    return [price(cells, card, unallocated=unallocated) for cells in groups]


def money_columns(p: Priced | None) -> dict:
    """A download's money columns: in the currency's minor unit, as the chargeback CSV gives
    them; empty when unpriced."""
    if p is None:
        return {"cost": None, "idle_cost": None, "currency": None}
    return {"cost": present(p.cost, p.currency), "idle_cost": present(p.idle_cost, p.currency), "currency": p.currency}


def shown_to_total(priced: list[Priced | None], group_of=None) -> list[Priced | None]:
    """`priced` with each cost and idle cost rounded so that, per currency, they add up to their
    rounded exact total — and, with `group_of(i)`, each group's to its own part: one exact
    amount split by largest remainder, as a statement's lines are (docs/chargeback.md,
    "Rounding"; docs/pages.md, "Downloads"). Each stays within one minor unit of its exact value."""
    out = list(priced)
    for which in ("cost", "idle_cost"):
        by_currency: dict[str, list[int]] = {}
        for i, p in enumerate(priced):
            if p is not None and getattr(p, which) is not None:
                by_currency.setdefault(p.currency, []).append(i)
        for currency, idx in by_currency.items():
            amounts = [getattr(priced[i], which) for i in idx]
            target = sum(amounts, Decimal(0)).quantize(minor_unit(currency), rounding=ROUND_HALF_UP)
            groups: dict = {}
            for i in idx:
                groups.setdefault(group_of(i) if group_of else "", []).append(i)
            keys = sorted(groups)
            parts = apportion(target, [sum((getattr(priced[i], which) for i in groups[k]), Decimal(0)) for k in keys],
                              currency)
            for key, part in zip(keys, parts):
                members = groups[key]
                for i, amount in zip(members, apportion(part, [getattr(priced[i], which) for i in members], currency)):
                    out[i] = replace(out[i], **{which: amount})
    return out


def ledger_priced(priced, money):
    """A priced figure with its cost taken from the ledger (when it is in one currency)."""
    if priced is None or money is None or len(money.costs) != 1:
        return priced
    [(currency, amount)] = money.costs.items()
    return replace(priced, cost=amount, currency=currency)


def frozen_day(priced, money):
    """A closed month's day: its frozen money, or none at all when every hour of it arrived after
    the close."""
    if money is not None and money.costs:
        return ledger_priced(priced, money)
    if priced is None or priced.cost is None:
        return priced
    return replace(priced, cost=Decimal(0))


def split_to_total(total: Priced | None, parts: list) -> list:
    """The parts of a table with `total` beside it (Priced or None, in rows' order), their costs
    split from the total as shown by largest remainder (`core.rounding.apportion`), so the rows add up to
    the total to the minor unit (docs/chargeback.md, "Rounding"). Unchanged when the total has no
    single currency, or a part is in another one."""
    if total is None or total.cost is None or total.currency is None:
        return parts
    idx = [i for i, p in enumerate(parts) if p is not None and p.cost is not None]
    if not idx or any(parts[i].currency != total.currency for i in idx):
        return parts
    shown = apportion(Decimal(present(total.cost, total.currency)), [parts[i].cost for i in idx], total.currency)
    out = list(parts)
    for i, amount in zip(idx, shown):
        out[i] = replace(parts[i], cost=amount)
    return out
