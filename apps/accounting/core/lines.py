"""Cells and lines: a usage cell (what a namespace held on a day, as seconds) and a statement line
(cells summed and priced with a `RateCard`), their sums, and shared idle cost spread over teams
(docs/chargeback.md). Money is `Decimal` and stays exact here: rounding is `rounding.py`'s. No Django.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from datetime import date
from decimal import Decimal
from math import fsum

from apps.accounting.core.measures import efficiency
from apps.accounting.core.ratecard import BASIS_PROFILE, RateCard, billed_cost, to_decimal
SECONDS_EPSILON = 1e-6  # a float difference smaller than this is no late data

# ---------------------------------------------------------------- cells and lines

@dataclass(slots=True)
class Cell:
    """Seconds for one (cluster, namespace, team, model, profile, price class, billing day): the
    one usage cell every part of accounting reads — live usage (`usage.cells.usage_cells`), stored
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
