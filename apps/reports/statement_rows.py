"""A statement as shown: the rows the API, its CSV, the XLSX and the HTML page all show
(docs/conventions.md, "One query, every output"), so they cannot disagree.

`accounting.statements.statement` says what a month costs — lines with exact and shown costs as
Decimals; this module only lays them out: hours and ratios as the pages round them, money as
text in the currency's minor unit, the API's field names and the CSV's columns.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal

from apps.accounting.core.lines import Line
from apps.accounting.core.ratecard import BASIS_PROFILE
from apps.accounting.core.rounding import ensure_shown, present
from apps.accounting.core.measures import shown_efficiency, shown_hours, shown_ratio
from apps.accounting.ledger.statements import UNALLOCATED_KEY, Statement, line_group, shown_costs, visible

GROUP_BYS = ("team", "namespace")


def rate_card_fields(stmt: Statement) -> dict | None:
    """Which rate card a statement used: the version (id of its last change in the rate
    history, Django admin → Rates → History) and when that change was made."""
    card = stmt.rate_card
    if card is None:
        return None
    return {"version": card.version, "changed_at": card.changed_at.isoformat() if card.changed_at else None}


def line_row(line: Line, shown_cost: Decimal | None) -> dict:
    return {
        "kind": line.kind,
        "adjusts_period": line.adjusts_period or None,
        "team": line.team or None,
        "cluster": line.cluster,
        "namespace": line.namespace,
        "gpu_model": line.gpu_model,
        "mig_profile": line.mig_profile,
        "price_class": line.price_class or None,
        "allocated_gpu_hours": shown_hours(line.allocated_gpu_seconds),
        "used_gpu_hours": shown_hours(line.used_gpu_seconds),
        "efficiency": shown_ratio(line.efficiency),
        "billed_hours": shown_hours(line.billed_seconds) if line.hourly_rate is not None else None,
        "billed_unit": ("instance-hour" if line.rate_basis == BASIS_PROFILE else "GPU-hour")
        if line.hourly_rate is not None else None,
        "hourly_rate": str(line.hourly_rate) if line.hourly_rate is not None else None,
        "currency": line.currency or None,
        "unpriced": not line.priced,
        "cost": present(shown_cost, line.currency) if shown_cost is not None else None,
    }


def group_row(key: tuple, lines: list[Line], with_lines: bool = True) -> dict:
    shown = shown_costs(lines)
    totals: dict[str, Decimal] = defaultdict(Decimal)
    adjustments: dict[str, Decimal] = defaultdict(Decimal)
    for line, amount in zip(lines, shown):
        if amount is not None:
            totals[line.currency] += amount
            if line.kind == "adjustment":
                adjustments[line.currency] += amount
    usage = [line for line in lines if line.kind in ("usage", "unallocated")]
    allocated = sum((line.allocated_gpu_seconds for line in usage), Decimal(0))
    used = sum((line.used_gpu_seconds for line in usage), Decimal(0))
    unpriced = sum((line.allocated_gpu_seconds for line in lines if not line.priced), Decimal(0))
    single = next(iter(totals)) if len(totals) == 1 else None   # the one currency, if only one
    return {
        "key": key[0],
        "team": key[1] or None,
        "cluster": key[2] or None,
        "namespace": key[3] or None,
        "allocated_gpu_hours": shown_hours(allocated),
        "used_gpu_hours": shown_hours(used),
        "efficiency": shown_efficiency(used, allocated),
        "unpriced_gpu_hours": shown_hours(unpriced),
        # Several currencies are never added up: cost is then null and costs_by_currency lists them.
        "cost": present(totals[single], single) if single is not None else None,
        "currency": single,
        "costs_by_currency": {c: present(a, c) for c, a in sorted(totals.items())},
        # The part of the cost that is adjustments: late data of closed months billed in this one
        # (docs/chargeback.md, "Adjustments"); "0.00" in the row's one currency when it has none.
        "adjustments": present(adjustments.get(single, Decimal(0)), single) if single is not None else None,
        "adjustments_by_currency": {c: present(a, c) for c, a in sorted(adjustments.items())},
        "adjusted_periods": sorted({line.adjusts_period for line in lines if line.kind == "adjustment"}),
        "lines": [line_row(line, amount) for line, amount in zip(lines, shown)] if with_lines else [],
    }


def statement_payload(stmt: Statement, group_by: str, scope, shared_idle: str = "apart", *,
                      lines_of: set[str] | None = None) -> dict:
    """The statement as shown. `lines_of`: only these groups' rows carry their line rows (the
    page shows one team's lines at a time); None: every group's do. Totals never change."""
    groups: dict[tuple, list[Line]] = defaultdict(list)
    for line in visible(ensure_shown(stmt.lines), scope):
        groups[line_group(line, group_by)].append(line)
    ordered = sorted(groups, key=lambda k: (k[0] == UNALLOCATED_KEY, k[0]))
    results = [group_row(k, groups[k], lines_of is None or k[0] in lines_of) for k in ordered]
    totals: dict[str, Decimal] = defaultdict(Decimal)
    adjustments: dict[str, Decimal] = defaultdict(Decimal)
    for row in results:
        for currency, amount in row["costs_by_currency"].items():
            totals[currency] += Decimal(amount)
        for currency, amount in row["adjustments_by_currency"].items():
            adjustments[currency] += Decimal(amount)
    return {
        "period": stmt.period,
        "group_by": group_by,
        "closed": stmt.closed,
        "closed_at": stmt.closed_at.isoformat() if stmt.closed_at else None,
        "rate_card": rate_card_fields(stmt),
        "shared_idle": shared_idle,
        "totals_by_currency": {c: present(a, c) for c, a in sorted(totals.items())},
        "adjustments_by_currency": {c: present(a, c) for c, a in sorted(adjustments.items())},
        "adjusted_periods": sorted({p for row in results for p in row["adjusted_periods"]}),
        "results": results,
    }


UNALLOCATED_NAME = "unallocated capacity"   # the one name of GPUs no pod held, in every file and on every page


def csv_rows(payload: dict) -> Iterator[dict]:
    """One CSV row per statement line, with its group key first, one at a time; the team of
    capacity no pod held is named as everywhere else, never left empty."""
    return ({"key": row["key"], **line, **({"team": UNALLOCATED_NAME} if _unallocated(line) else {})}
            for row in payload["results"] for line in row["lines"])


def _unallocated(line: dict) -> bool:
    return not line.get("team") and not line.get("namespace")


CSV_COLUMNS = ["key", "kind", "adjusts_period", "team", "cluster", "namespace", "gpu_model", "mig_profile",
               "price_class", "allocated_gpu_hours", "used_gpu_hours", "efficiency", "billed_hours",
               "billed_unit", "hourly_rate", "currency", "unpriced", "cost"]


__all__ = ["statement_payload", "group_row", "line_row", "csv_rows", "CSV_COLUMNS", "GROUP_BYS", "rate_card_fields",
           "UNALLOCATED_NAME"]
