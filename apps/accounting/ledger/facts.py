"""What a statement states besides its lines, as data (docs/chargeback.md, "The statement workbook"):
its lines with their cost as the statement shows it, the rates they were priced at, and each
cluster's ingest watermark. The workbook (`apps/reports/statement_book.py`), the FOCUS export and
e-mailed statements lay these out; nothing here is formatted.

Costs as shown are the statement rounded once as a whole (`core.rounding.shown_amounts`,
docs/chargeback.md "Rounding"), so every breakdown adds up to the statement's total.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from apps.accounting.core.lines import Line
from apps.accounting.core.periods import last_day, period_bounds
from apps.accounting.models import BillingPeriod
from apps.accounting.ledger.answer import month_zone
from apps.accounting.core.ratecard import BASIS_PROFILE, RateCard
from apps.accounting.core.rounding import ensure_shown
from apps.accounting.ledger.statements import UNALLOCATED_KEY, clusters_behind, line_group, shown_costs, visible


@dataclass(frozen=True)
class RateUsed:
    gpu_model: str
    mig_profile: str            # "" : priced per GPU-hour of the model
    price_class: str
    hourly_rate: Decimal
    currency: str
    effective_from: date | None  # None: the rate is not on the card the statement names
    billed_unit: str


@dataclass(frozen=True)
class Freshness:
    cluster: str
    ingested_until: datetime | None
    behind: bool                # the watermark has not reached the month's end


def lines_as_shown(lines: list[Line], scope) -> list[tuple[Line, Decimal | None]]:
    """The lines `scope` may see, each with its cost as the statement shows it (None:
    unpriced). The FOCUS export and the workbook's breakdowns read costs from here."""
    groups: dict[tuple, list[Line]] = defaultdict(list)
    for line in visible(ensure_shown(lines), scope):
        groups[line_group(line, "team")].append(line)
    out = []
    for key in sorted(groups, key=lambda k: (k[0] == UNALLOCATED_KEY, k[0])):
        out += list(zip(groups[key], shown_costs(groups[key])))
    return out


def billed_unit(line: Line) -> str | None:
    if line.hourly_rate is None:
        return None
    return "instance-hour" if line.rate_basis == BASIS_PROFILE else "GPU-hour"


def rates_used(lines: list[Line], period: str, card: RateCard) -> list[RateUsed]:
    """The card's rates behind the priced lines: for each line, the entries in force on the days
    of the month it bills (the corrected month for an adjustment) with its rate and currency."""
    found: set[RateUsed] = set()
    seen: set[tuple] = set()
    for line in lines:
        if line.hourly_rate is None:
            continue
        month = line.adjusts_period or period
        key = (line.gpu_model, line.mig_profile, line.price_class, line.rate_basis, line.hourly_rate,
               line.currency, month)
        if key in seen:
            continue
        seen.add(key)
        profile = line.mig_profile if line.rate_basis == BASIS_PROFILE else ""
        hits = set()
        day, last = date(int(month[:4]), int(month[5:7]), 1), last_day(month)
        while day <= last:
            hit = card.lookup(line.gpu_model, line.mig_profile, line.price_class, day)
            if hit and hit[1] == line.rate_basis and hit[0].hourly_rate == line.hourly_rate \
                    and hit[0].currency == line.currency:
                hits.add(hit[0].effective_from)
            day += timedelta(days=1)
        for effective_from in hits or {None}:
            found.add(RateUsed(line.gpu_model, profile, line.price_class, line.hourly_rate, line.currency,
                               effective_from, billed_unit(line)))
    return sorted(found, key=lambda r: (r.gpu_model, r.mig_profile, r.price_class, r.currency,
                                        r.effective_from or date.min, r.hourly_rate))


def freshness(period: str, clusters: set[str] | None) -> list[Freshness]:
    """Each cluster's ingest watermark; `clusters` None: all of them. A closed month's are those
    its close recorded, so its workbook does not change with each ingest (months closed before
    they were recorded: now's)."""
    from apps.clusters.models import Cluster
    bp = BillingPeriod.objects.filter(period=period, closed_at__isnull=False).first()
    if bp is not None and bp.watermarks:
        end = period_bounds(period, month_zone(period, {period: bp}))[1]
        rows = [(name, datetime.fromisoformat(until) if until else None) for name, until in sorted(bp.watermarks.items())]
        return [Freshness(name, until, until is None or until < end) for name, until in rows
                if clusters is None or name in clusters]
    behind = set(clusters_behind(period))
    rows = Cluster.objects.order_by("name").values_list("name", "ingested_until")
    return [Freshness(name, until, name in behind) for name, until in rows if clusters is None or name in clusters]


__all__ = ["lines_as_shown", "rates_used", "RateUsed", "Freshness", "freshness", "billed_unit"]
