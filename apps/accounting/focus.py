"""A month's chargeback as FOCUS 1.0 rows (the FinOps Open Cost and Usage Specification).

One row per statement line and billing-zone day: the statement says what a line costs, the
usage cells it was priced from say how its hours fall on the days. Each line's shown cost is
split over its days in the currency's minor unit (`calc.apportion`), so the rows' BilledCost
adds up to the statement's total exactly, per currency (docs/chargeback.md, "FOCUS export").

- Open month: the statement's lines (`months.month_lines`, the stored month answer every
  surface reads), and per line its day figures from the month's per-day cells (the cells
  closing would freeze; they give the same lines, `calc.line_sums` sums either grain exactly)
  and the closed months' late-data cells.
- Closed month: the frozen lines, and the frozen cells booked in that month (its own and its
  adjustments), matched to the lines with the rate card in force when it was closed.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from zoneinfo import ZoneInfo

from .calc import (BASIS_PROFILE, Line, RateCard, apportion, billed_cost, line_sums,
                   period_bounds)
from .days import day_start
from .figures import shown_efficiency, shown_hours
from .models import BillingPeriod, FrozenCell
from .months import (_FROZEN_AS_CELL, closed_before, closed_periods, frozen_cell, month_late_cells, month_lines, month_zone,
                     own_days)
from .pricing import load_rate_card, rate_card_at
from .statement_book import lines_as_shown
from .statements import UNALLOCATED_KEY, statement

FOCUS_VERSION = "1.0"
SERVICE_NAME = "GPU compute"
SERVICE_CATEGORY = "AI and Machine Learning"
TAG_PREFIX = "gpuportal/"
# FOCUS 1.0's `Committed` is a price reduced by a commitment discount named in CommitmentDiscountId;
# a `reserved` rate is a price of its own with no such commitment behind it, so it is `Other`.
PRICING_CATEGORY = {"on_demand": "Standard", "spot": "Dynamic", "reserved": "Other", "on_prem": "Other"}
UNIT_GPU = "GPU-Hours"
UNIT_INSTANCE = "Instance-Hours"

# FOCUS 1.0 columns, in the specification's names (unchanged in 1.1 and 1.2).
FOCUS_COLUMNS = [
    "AvailabilityZone", "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency",
    "BillingPeriodEnd", "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription",
    "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart", "CommitmentDiscountCategory",
    "CommitmentDiscountId", "CommitmentDiscountName", "CommitmentDiscountStatus", "CommitmentDiscountType",
    "ConsumedQuantity", "ConsumedUnit", "ContractedCost", "ContractedUnitPrice", "EffectiveCost",
    "InvoiceIssuerName", "ListCost", "ListUnitPrice", "PricingCategory", "PricingQuantity", "PricingUnit",
    "ProviderName", "PublisherName", "RegionId", "RegionName", "ResourceId", "ResourceName", "ResourceType",
    "ServiceCategory", "ServiceName", "SkuId", "SkuPriceId", "SubAccountId", "SubAccountName", "Tags",
]
# The FinOps focus-validator 1.0.0 checks five of them under their 1.0-preview names; the
# export repeats them under those names too (unless `legacy_names=False`).
LEGACY_NAMES = {"ChargeCategory": "ChargeType", "InvoiceIssuerName": "InvoiceIssuer", "ProviderName": "Provider",
                "PublisherName": "Publisher", "ResourceId": "ResourceID"}
PORTAL_COLUMNS = [
    "x_ChargeKind", "x_AdjustsPeriod", "x_Cluster", "x_Namespace", "x_GpuModel", "x_MigProfile", "x_PriceClass",
    "x_AllocatedGpuHours", "x_UsedGpuHours", "x_Efficiency",
]
HOURS_PLACES = Decimal("0.000001")


def columns(legacy_names: bool = True) -> list[str]:
    return FOCUS_COLUMNS + (list(LEGACY_NAMES.values()) if legacy_names else []) + PORTAL_COLUMNS


@dataclass(frozen=True)
class Issuer:
    """Who the rows say issued the charges (settings FOCUS_PROVIDER_NAME, FOCUS_BILLING_ACCOUNT_*)."""
    provider_name: str = "gpuportal"
    billing_account_id: str = "gpuportal"
    billing_account_name: str = "gpuportal"


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
    zone: ZoneInfo                          # the month's own (`months.month_zone`): a closed month's close zone


# ---------------------------------------------------------------- the day figures of each line

def line_key(line: Line) -> tuple:
    return (line.adjusts_period, line.kind, line.team, line.cluster, line.namespace, line.gpu_model,
            line.mig_profile, line.price_class, line.rate_basis, line.hourly_rate, line.currency)


def day_figures(cells, card: RateCard, *, adjusts_period: str = "") -> dict[tuple, list[DayFigures]]:
    """Per statement line (as `line_key`), its figures day by day: `calc.line_sums` over each
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
        days = day_figures(own_days(period), card)
        closed = closed_periods()
        for earlier in closed_before(period, closed):
            days.update(day_figures(month_late_cells(earlier, closed[earlier]), card, adjusts_period=earlier))
        return FocusMonth(period=period, closed=False, lines=month_lines(period, card), days=days,
                          zone=month_zone(period, closed))
    card = rate_card_at(bp.rate_card_version)
    booked = defaultdict(list)
    for usage_period, *row in FrozenCell.objects.filter(booked_in=bp).values_list("period__period", *_FROZEN_AS_CELL):
        booked[usage_period].append(frozen_cell(*row))
    days = day_figures(booked.pop(period, []), card)
    for earlier, cells in booked.items():
        days.update(day_figures(cells, card, adjusts_period=earlier))
    return FocusMonth(period=period, closed=True, lines=statement(period).lines, days=days,
                      zone=month_zone(period, {period: bp}))


# ---------------------------------------------------------------- rows

def shown_lines(lines: list[Line], scope) -> list[tuple[Line, Decimal]]:
    """The priced lines the user may see with their cost as the statement by team shows it
    (`statement_book.lines_as_shown`). Unpriced lines have no cost and no currency, which a
    FOCUS row must have: they are left out."""
    return [(line, cost) for line, cost in lines_as_shown(lines, scope) if cost is not None]


def focus_rows(month: FocusMonth, scope, issuer: Issuer, *, legacy_names: bool = True) -> list[dict]:
    zone = month.zone
    start, end = period_bounds(month.period, zone)
    common = {
        "BillingAccountId": issuer.billing_account_id, "BillingAccountName": issuer.billing_account_name,
        "BillingPeriodStart": instant(start), "BillingPeriodEnd": instant(end),
        "ChargeCategory": "Usage", "ChargeFrequency": "Usage-Based",
        "InvoiceIssuerName": issuer.provider_name, "ProviderName": issuer.provider_name,
        "PublisherName": issuer.provider_name, "ServiceCategory": SERVICE_CATEGORY, "ServiceName": SERVICE_NAME,
    }
    rows = []
    charge_periods = ChargePeriods(month.period, zone)
    for line, cost in shown_lines(month.lines, scope):
        days = month.days.get(line_key(line)) or [DayFigures(None, line.allocated_gpu_seconds,
                                                             line.used_gpu_seconds, line.billed_seconds)]
        costs = apportion(cost, [billed_cost(line.hourly_rate, d.billed_seconds) for d in days], line.currency)
        described = line_columns(line)
        rows += [{**common, **described, **charge_periods.of(line, d.day), **day_columns(line, d, day_cost)}
                 for d, day_cost in zip(days, costs)]
    if legacy_names:
        for row in rows:
            row.update({old: row[new] for new, old in LEGACY_NAMES.items()})
    return rows


def line_columns(line: Line) -> dict:
    """What a statement line's rows share: who, what, at which price."""
    unit = UNIT_INSTANCE if line.rate_basis == BASIS_PROFILE else UNIT_GPU
    what = f"{line.gpu_model} {line.mig_profile}".strip()
    sku = ":".join((line.gpu_model, line.mig_profile or "gpu", line.price_class))
    allocated = bool(line.namespace)
    resource = f"{line.cluster}/{line.namespace}" if allocated else line.cluster
    description = f"{unit} of {what} ({line.price_class})"
    if not allocated:
        description = f"Unallocated capacity of {line.cluster}: {description}"
    if line.kind == "adjustment":
        description += f", correcting {line.adjusts_period} (late or re-ingested data)"
    tags = {f"{TAG_PREFIX}cluster": line.cluster}
    if allocated:
        tags.update({f"{TAG_PREFIX}namespace": line.namespace, f"{TAG_PREFIX}team": line.team})
    return {
        "AvailabilityZone": None, "RegionId": None, "RegionName": None,
        "BillingCurrency": line.currency,
        "ChargeClass": "Correction" if line.kind == "adjustment" else None,
        "ChargeDescription": description,
        "CommitmentDiscountCategory": None, "CommitmentDiscountId": None, "CommitmentDiscountName": None,
        "CommitmentDiscountStatus": None, "CommitmentDiscountType": None,
        "ConsumedUnit": unit, "PricingUnit": unit,
        "ContractedUnitPrice": line.hourly_rate, "ListUnitPrice": line.hourly_rate,
        "PricingCategory": PRICING_CATEGORY.get(line.price_class, "Other"),
        "ResourceId": resource, "ResourceName": resource,
        "ResourceType": "Kubernetes namespace" if allocated else "Kubernetes cluster",
        "SkuId": sku, "SkuPriceId": f"{sku}@{line.hourly_rate} {line.currency}/{unit[:-1]}",
        "SubAccountId": line.team if allocated else UNALLOCATED_KEY,
        "SubAccountName": line.team if allocated else "unallocated capacity",
        "Tags": json.dumps(tags, sort_keys=True, ensure_ascii=False),
        "x_ChargeKind": line.kind, "x_AdjustsPeriod": line.adjusts_period or None, "x_Cluster": line.cluster,
        "x_Namespace": line.namespace or None, "x_GpuModel": line.gpu_model, "x_MigProfile": line.mig_profile or None,
        "x_PriceClass": line.price_class,
    }


class ChargePeriods:
    """ChargePeriodStart / End: the billing-zone day of a row, or for a line without day figures
    its whole month (the corrected month for an adjustment). Each written once per export."""

    def __init__(self, period: str, zone: ZoneInfo):
        self.period, self.zone, self.seen = period, zone, {}

    def of(self, line: Line, day: date | None) -> dict:
        key = day or line.adjusts_period or self.period
        found = self.seen.get(key)
        if found is None:
            if day is None:
                start, end = period_bounds(key, self.zone)
            else:
                start, end = day_start(day, self.zone), day_start(day + timedelta(days=1), self.zone)
            found = self.seen[key] = {"ChargePeriodStart": instant(start), "ChargePeriodEnd": instant(end)}
        return found


def day_columns(line: Line, d: DayFigures, cost: Decimal) -> dict:
    """A row's quantities and costs. BilledCost and EffectiveCost are the statement's money (the
    line's shown cost split over its days); ListCost and ContractedCost are, as FOCUS 1.0 defines
    them, the unit price × PricingQuantity as written (unrounded), except on corrections, which
    carry the corrected amount."""
    billed_hours = hours(d.billed_seconds)
    cost = plain(cost)
    listed = cost if line.kind == "adjustment" else plain(line.hourly_rate * billed_hours)
    return {
        "PricingQuantity": billed_hours, "ConsumedQuantity": billed_hours,
        "BilledCost": cost, "EffectiveCost": cost, "ContractedCost": listed, "ListCost": listed,
        "x_AllocatedGpuHours": hours(d.allocated_gpu_seconds), "x_UsedGpuHours": hours(d.used_gpu_seconds),
        "x_Efficiency": ratio(shown_efficiency(d.used_gpu_seconds, d.allocated_gpu_seconds)),
    }


# ---------------------------------------------------------------- values as written

def instant(moment: datetime) -> str:
    """An ISO 8601 UTC instant with Z, as FOCUS date/time columns want it."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def plain(amount: Decimal) -> Decimal:
    """A Decimal that prints as a plain number: never -0.00."""
    return amount.copy_abs() if amount == 0 else amount


def hours(seconds) -> Decimal:
    """`figures.shown_hours` as a Decimal with its 6 places written out (no 1e-06)."""
    return plain(Decimal(repr(shown_hours(seconds))).quantize(HOURS_PLACES))


def ratio(value: float | None) -> Decimal | None:
    return None if value is None else plain(Decimal(repr(value)).quantize(HOURS_PLACES))
