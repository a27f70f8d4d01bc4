"""Money as shown: rounded to the currency's own minor unit (JPY 1, USD 0.01, KWD 0.001;
docs/dates-and-money.md) only here, and split so that rows always sum to the total beside them
(largest remainder). No Django.
"""
from __future__ import annotations

from collections import defaultdict
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal

from apps.accounting.core.currencies import minor_unit
from apps.accounting.core.lines import Line
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
