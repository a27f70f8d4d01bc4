"""A month's chargeback as FOCUS 1.0 or 1.3 rows (the FinOps Open Cost and Usage Specification):
the columns, as docs/chargeback.md ("FOCUS export", "FOCUS 1.3") lists them.

One row per statement line and billing-zone day (`accounting.focus.focus_month` gives the lines
and their day figures). Each line's shown cost is split over its days in the currency's minor
unit (`core.rounding.apportion`), so the rows' BilledCost adds up to the statement's total exactly, per
currency.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from zoneinfo import ZoneInfo

from .statement_rows import UNALLOCATED_NAME
from apps.accounting.core.ratecard import BASIS_PROFILE, billed_cost
from apps.accounting.core.lines import Line
from apps.accounting.core.rounding import apportion
from apps.accounting.core.periods import period_bounds
from apps.accounting.calendar.zone import day_start
from apps.accounting.core.measures import shown_efficiency, shown_hours
from apps.accounting.ledger.daily_money import DayFigures, FocusMonth, line_key
from apps.accounting.ledger.facts import lines_as_shown
from apps.accounting.ledger.statements import UNALLOCATED_KEY
from apps.accounting.ledger.daily_money import SharedDay, ratios_to_places, shared_idle_days, spread_lines
from apps.accounting.usage.shared_gpus import SharedGpuDays, shared_gpu_days, shared_ratio

FOCUS_VERSION = "1.0"       # the default, for the loaders and the validator already reading it
FOCUS_VERSIONS = ("1.0", "1.3")
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


# FOCUS 1.3 (docs/chargeback.md, "FOCUS 1.3"): ProviderName and PublisherName are deprecated but
# still in the specification, so kept; ServiceProviderName and HostProviderName are new and
# mandatory; the split cost allocation columns are filled on the rows of a split cost (shared idle
# spread over teams) and null on every other row. The commitment discount columns are left out:
# FOCUS 1.3 wants them only from providers that offer commitment discounts, and the portal has none.
COMMITMENT_COLUMNS = ["CommitmentDiscountCategory", "CommitmentDiscountId", "CommitmentDiscountName",
                      "CommitmentDiscountStatus", "CommitmentDiscountType"]
ALLOCATION_COLUMNS = ["AllocatedMethodDetails", "AllocatedMethodId", "AllocatedResourceId", "AllocatedResourceName",
                      "AllocatedTags"]
FOCUS_13_COLUMNS = sorted([c for c in FOCUS_COLUMNS if c not in COMMITMENT_COLUMNS]
                          + ["HostProviderName", "InvoiceId", "ServiceProviderName", "ServiceSubcategory"]
                          + ALLOCATION_COLUMNS)
SERVICE_SUBCATEGORY = "Other (AI and Machine Learning)"
# The portal's split cost allocation method (FOCUS 1.3's AllocatedMethodId), documented in
# docs/chargeback.md ("Split costs in FOCUS 1.3").
SHARED_IDLE_METHOD = "gpuportal/shared-idle-by-allocated-cost"
# GPUs held in parts (HAMi shares, time-slicing, a DRA claim shared by pods): each day's hours of
# a cluster's split GPUs of one model and price class are split over the namespaces that held parts
# of them, by GPU-seconds (docs/chargeback.md, "Split costs in FOCUS 1.3").
SHARED_GPU_METHOD = "gpuportal/shared-gpu-by-gpu-seconds"


def columns(legacy_names: bool = True, version: str = FOCUS_VERSION) -> list[str]:
    if version == "1.3":
        return FOCUS_13_COLUMNS + PORTAL_COLUMNS
    return FOCUS_COLUMNS + (list(LEGACY_NAMES.values()) if legacy_names else []) + PORTAL_COLUMNS


@dataclass(frozen=True)
class Issuer:
    """Who the rows say issued the charges (settings FOCUS_PROVIDER_NAME, FOCUS_BILLING_ACCOUNT_*)."""
    provider_name: str = "gpuportal"
    host_provider_name: str = "gpuportal"
    billing_account_id: str = "gpuportal"
    billing_account_name: str = "gpuportal"


# ---------------------------------------------------------------- rows

def shown_lines(lines: list[Line], scope) -> list[tuple[Line, Decimal]]:
    """The priced lines the user may see with their cost as the statement by team shows it
    (`ledger.facts.lines_as_shown`). Unpriced lines have no cost and no currency, which a
    FOCUS row must have: they are left out."""
    return [(line, cost) for line, cost in lines_as_shown(lines, scope) if cost is not None]


def focus_rows(month: FocusMonth, scope, issuer: Issuer, *, legacy_names: bool = True, version: str = FOCUS_VERSION,
               shared_idle: str = "apart") -> list[dict]:
    return list(iter_focus_rows(month, scope, issuer, legacy_names=legacy_names, version=version,
                                shared_idle=shared_idle))


def iter_focus_rows(month: FocusMonth, scope, issuer: Issuer, *, legacy_names: bool = True,
                    version: str = FOCUS_VERSION, shared_idle: str = "apart") -> Iterator[dict]:
    """The rows one at a time, line by line and day by day: the export streams them
    (docs/performance.md, "Exports stream"), so only a line's rows exist at once.

    `version` "1.3" adds the FOCUS 1.3 columns (and never the 1.0-preview names, which 1.3 would
    read as custom columns without their `x_`); `shared_idle` "spread" gives each team its share
    of the unallocated capacity, day by day, as split cost rows (docs/chargeback.md)."""
    zone = month.zone
    legacy_names = legacy_names and version == "1.0"
    start, end = period_bounds(month.period, zone)
    common = {
        "BillingAccountId": issuer.billing_account_id, "BillingAccountName": issuer.billing_account_name,
        "BillingPeriodStart": instant(start), "BillingPeriodEnd": instant(end),
        "ChargeCategory": "Usage", "ChargeFrequency": "Usage-Based",
        "InvoiceIssuerName": issuer.provider_name, "ProviderName": issuer.provider_name,
        "PublisherName": issuer.provider_name, "ServiceCategory": SERVICE_CATEGORY, "ServiceName": SERVICE_NAME,
    }
    if version == "1.3":
        common.update({"ServiceProviderName": issuer.provider_name, "HostProviderName": issuer.host_provider_name,
                       "ServiceSubcategory": SERVICE_SUBCATEGORY, "InvoiceId": None,
                       **{c: None for c in ALLOCATION_COLUMNS}})
    charge_periods = ChargePeriods(month.period, zone, month.adjusted_zones)
    lines = month.lines
    shared = {}
    if shared_idle == "spread":
        lines = spread_lines(month)
        shared = shared_idle_days(month, lines)
    split = SharedGpuSplit(shared_gpu_days(start, end), with_remainder=shared_idle != "spread") \
        if version == "1.3" else None
    for line, cost in shown_lines(lines, scope):
        if line.kind == "shared_idle":
            yield from shared_rows(line, shared.get(line_key(line), []), common, charge_periods, version)
            continue
        days = month.days.get(line_key(line)) or [DayFigures(None, line.allocated_gpu_seconds,
                                                             line.used_gpu_seconds, line.billed_seconds)]
        costs = apportion(cost, [billed_cost(line.hourly_rate, d.billed_seconds) for d in days], line.currency)
        described = line_columns(line)
        for d, day_cost in zip(days, costs):
            parts = split.parts(line, d, day_cost) if split is not None else [(d, day_cost, Decimal(1), None)]
            for part, part_cost, share, allocation in parts:
                row = {**common, **described, **charge_periods.of(line, d.day),
                       **day_columns(line, d, part_cost, share)}
                if allocation:
                    row.update(allocation)
                if legacy_names:
                    row.update({old: row[new] for new, old in LEGACY_NAMES.items()})
                yield row


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
        "SubAccountName": line.team if allocated else UNALLOCATED_NAME,
        "Tags": json.dumps(tags, sort_keys=True, ensure_ascii=False),
        "x_ChargeKind": line.kind, "x_AdjustsPeriod": line.adjusts_period or None, "x_Cluster": line.cluster,
        "x_Namespace": line.namespace or None, "x_GpuModel": line.gpu_model, "x_MigProfile": line.mig_profile or None,
        "x_PriceClass": line.price_class,
    }


def shared_rows(line: Line, parts: list[SharedDay], common: dict, charge_periods: "ChargePeriods",
                version: str) -> Iterator[dict]:
    """A team's spread share of a cluster's unallocated capacity: one row per origin line and day,
    described as the origin (its cluster, SKU and price) and charged to the team. FOCUS 1.3 calls
    each an allocated charge of a split cost allocation; its Allocated* columns say to whom and how."""
    for part in parts:
        origin = part.origin
        row = {**common, **line_columns(origin), **charge_periods.of(origin, part.day.day),
               **day_columns(origin, part.day, part.cost, part.ratio)}
        row.update({
            "SubAccountId": line.team, "SubAccountName": line.team, "x_ChargeKind": line.kind,
            "ChargeDescription": f"Shared idle capacity of {origin.cluster}, spread to {line.team} "
                                 f"({part.shown_ratio} of it): {line_columns(origin)['ChargeDescription']}",
        })
        if version == "1.3":
            row.update({
                "AllocatedMethodId": SHARED_IDLE_METHOD,
                "AllocatedMethodDetails": json.dumps({"Elements": [{
                    "AllocatedRatio": float(part.shown_ratio), "x_Basis": "allocated cost",
                    "x_Group": {"cluster": origin.cluster, "gpu_model": origin.gpu_model,
                                "currency": origin.currency}}]}, sort_keys=True, ensure_ascii=False),
                "AllocatedResourceId": line.team, "AllocatedResourceName": line.team,
                "AllocatedTags": json.dumps({f"{TAG_PREFIX}team": line.team}, sort_keys=True, ensure_ascii=False),
            })
        yield row


class SharedGpuSplit:
    """A row's part on GPUs held in parts (`usage.shared_gpus`), as its own FOCUS 1.3 row: an
    allocated charge of the day's split GPUs of its cluster, model and price class (the origin
    charge, `ResourceId` the cluster), to the namespace (`AllocatedResourceId` cluster/namespace),
    or the origin's unallocated remainder (`AllocatedResourceId` null). `with_remainder` False
    (shared idle spread over the teams, which spreads the remainder as its own split): the origin
    is what the pods held of the GPUs, and the namespaces' ratios of it add up to 1."""

    def __init__(self, days: SharedGpuDays, with_remainder: bool = True):
        self.days, self.with_remainder = days, with_remainder
        self.left: dict[tuple, float] = dict(days.parts)      # a part is given once (a day split by a re-label)
        self.shown: dict[tuple, dict[str, Decimal]] = {}

    def parts(self, line: Line, d: DayFigures, cost: Decimal) -> list[tuple[DayFigures, Decimal, Decimal, dict | None]]:
        """(the day's figures, the part's cost, its share of the row's day, its Allocated* columns):
        the whole row when none of it was on split GPUs, else its part on them and the rest."""
        whole = [(d, cost, Decimal(1), None)]
        if (line.kind not in ("usage", "unallocated") or line.mig_profile or line.rate_basis == BASIS_PROFILE
                or d.day is None or d.billed_seconds <= 0):
            return whole
        if not line.namespace and not self.with_remainder:
            return whole
        key = (line.cluster, line.namespace, line.gpu_model, line.price_class, d.day)
        seconds = min(self.left.get(key, 0.0), float(d.billed_seconds))
        if seconds <= 0:
            return whole
        self.left[key] -= seconds
        origin = (line.cluster, line.gpu_model, line.price_class, d.day)
        ratio = self.ratio(origin, line.namespace, seconds)
        share = Decimal(1) if seconds >= float(d.billed_seconds) - 1e-6 else Decimal(repr(seconds)) / d.billed_seconds
        costs = apportion(cost, [billed_cost(line.hourly_rate, d.billed_seconds * (1 - share)),
                                 billed_cost(line.hourly_rate, d.billed_seconds * share)], line.currency)
        held = float(hours(seconds))
        allocation = {
            "AllocatedMethodId": SHARED_GPU_METHOD,
            "AllocatedMethodDetails": json.dumps({"Elements": [{
                "AllocatedRatio": float(ratio), "UsageUnit": UNIT_GPU, "UsageQuantity": held,
                "x_SplitGpuHours": float(hours(self.origin_seconds(origin))),
            }]}, sort_keys=True, ensure_ascii=False),
            "AllocatedResourceId": None, "AllocatedResourceName": None, "AllocatedTags": None,
            "ResourceId": line.cluster, "ResourceName": line.cluster, "ResourceType": "Kubernetes cluster",
            "Tags": json.dumps({f"{TAG_PREFIX}cluster": line.cluster}, sort_keys=True, ensure_ascii=False),
        }
        if line.namespace:
            allocation.update({
                "AllocatedResourceId": f"{line.cluster}/{line.namespace}",
                "AllocatedResourceName": f"{line.cluster}/{line.namespace}",
                "AllocatedTags": json.dumps({f"{TAG_PREFIX}namespace": line.namespace, f"{TAG_PREFIX}team": line.team},
                                            sort_keys=True, ensure_ascii=False),
            })
        rows = [(d, costs[1], share, allocation)]
        if share < 1:
            rows.insert(0, (d, costs[0], 1 - share, None))
        return rows

    def origin_seconds(self, origin: tuple) -> float:
        return self.days.origin(*origin) if self.with_remainder else self.days.allocated(*origin)

    def ratio(self, origin: tuple, namespace: str, seconds: float) -> Decimal:
        """The part's AllocatedRatio: its share of the origin to 6 places, the origin's parts
        rounded together by largest remainder so that they add up to 1 exactly."""
        shown = self.shown.get(origin)
        if shown is None:
            cluster, model, price_class, day = origin
            whole = self.origin_seconds(origin)
            names = sorted(ns for (c, ns, m, pc, dy) in self.days.parts
                           if (c, m, pc, dy) == origin and (ns or self.with_remainder))
            exact = [shared_ratio(self.days.part(cluster, ns, model, price_class, day), whole) for ns in names]
            shown = self.shown[origin] = dict(zip(names, ratios_to_places(exact)))
        part = self.days.part(origin[0], namespace, origin[1], origin[2], origin[3])
        ratio = shown.get(namespace, Decimal(0))
        if part and abs(seconds - part) > 1e-6:      # a namespace's part on two lines (a re-label that day)
            ratio = (ratio * Decimal(repr(seconds)) / Decimal(repr(part))).quantize(HOURS_PLACES)
        return ratio


class ChargePeriods:
    """ChargePeriodStart / End: the billing-zone day of a row, or for a line without day figures
    its whole month (the corrected month for an adjustment). Each written once per export."""

    def __init__(self, period: str, zone: ZoneInfo, adjusted_zones: dict[str, ZoneInfo] | None = None):
        self.period, self.zone, self.seen = period, zone, {}
        self.adjusted_zones = adjusted_zones or {}

    def of(self, line: Line, day: date | None) -> dict:
        # A correction's day is a day of the month it corrects, in that month's own zone (the
        # zone it was closed in), whatever zone the month booking it is in (docs/chargeback.md).
        zone = self.adjusted_zones.get(line.adjusts_period, self.zone) if line.adjusts_period else self.zone
        key = (day or line.adjusts_period or self.period, zone.key)
        found = self.seen.get(key)
        if found is None:
            if day is None:
                start, end = period_bounds(key[0], zone)
            else:
                start, end = day_start(day, zone), day_start(day + timedelta(days=1), zone)
            found = self.seen[key] = {"ChargePeriodStart": instant(start), "ChargePeriodEnd": instant(end)}
        return found


def day_columns(line: Line, d: DayFigures, cost: Decimal, share: Decimal = Decimal(1)) -> dict:
    """A row's quantities and costs. BilledCost and EffectiveCost are the statement's money (the
    line's shown cost split over its days); ListCost and ContractedCost are, as FOCUS 1.0 defines
    them, the unit price × PricingQuantity as written, on corrections too (negative for vanished
    hours): exact, at the fixed scale of a 6-place price times a 6-place quantity (12 places).
    `share`: a split cost's part of the day (its quantities are that part of the origin's)."""
    billed_hours = hours(d.billed_seconds * share)
    cost = plain(cost)
    listed = plain((line.hourly_rate * billed_hours).quantize(LIST_PLACES))
    allocated, used = d.allocated_gpu_seconds * share, d.used_gpu_seconds * share
    return {
        "PricingQuantity": billed_hours, "ConsumedQuantity": billed_hours,
        "BilledCost": cost, "EffectiveCost": cost, "ContractedCost": listed, "ListCost": listed,
        "x_AllocatedGpuHours": hours(allocated), "x_UsedGpuHours": hours(used),
        "x_Efficiency": ratio(shown_efficiency(used, allocated)),
    }


# ---------------------------------------------------------------- values as written

LIST_PLACES = Decimal("1e-12")       # ListCost's fixed scale: price (6 places) × quantity (6 places), exact


def instant(moment: datetime) -> str:
    """An ISO 8601 UTC instant with Z, as FOCUS date/time columns want it."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def plain(amount: Decimal) -> Decimal:
    """A Decimal that prints as a plain number: never -0.00."""
    return amount.copy_abs() if amount == 0 else amount


def hours(seconds) -> Decimal:
    """`core.measures.shown_hours` as a Decimal with its 6 places written out (no 1e-06)."""
    return plain(Decimal(repr(shown_hours(seconds))).quantize(HOURS_PLACES))


def ratio(value: float | None) -> Decimal | None:
    return None if value is None else plain(Decimal(repr(value)).quantize(HOURS_PLACES))
