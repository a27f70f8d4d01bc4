"""A month's ledger: the one place a month's money is read from (docs/chargeback.md, "One
month, one answer").

The ledger of a month is its statement (`statements.statement`): for a closed month its frozen
lines, for an open month its live lines with the adjustments for the closed months before it,
rounded once as a whole (`calc.shown_amounts`). Every view of a whole month's money — the
chargeback page and API, the usage API's month rows by team or namespace, the team page's
months, the overview, budget alerts — reads its figures from here, so a month shows one
figure per team and per namespace wherever it is looked at.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from .calc import Line, present
from .figures import shown_hours
from .statements import Statement, statement
from .usage import UNASSIGNED

OWN_USAGE = ("usage",)           # a team's own allocated usage of the month (no adjustments, no idle)


def month_ledger(period: str) -> Statement:
    """The month's statement lines, each with its shown cost (unallocated cost apart)."""
    return statement(period)


@dataclass
class Money:
    """One key's money on the ledger: shown amounts per currency, and unpriced GPU-seconds."""
    costs: dict[str, Decimal]
    unpriced_seconds: Decimal

    @property
    def single(self) -> tuple[str | None, str | None]:
        """(shown cost, currency) when exactly one currency is priced; (None, None) else."""
        if len(self.costs) != 1:
            return None, None
        [(currency, amount)] = self.costs.items()
        return present(amount, currency), currency


def money_by(lines: list[Line], key_of, kinds: tuple[str, ...] | None = None) -> dict[str, Money]:
    """key -> its lines' shown costs per currency (`kinds`: only lines of these kinds)."""
    out: dict[str, Money] = defaultdict(lambda: Money(defaultdict(Decimal), Decimal(0)))
    for line in lines:
        if kinds is not None and line.kind not in kinds:
            continue
        money = out[key_of(line)]
        if line.cost is None:
            money.unpriced_seconds += line.allocated_gpu_seconds
        else:
            money.costs[line.currency] += line.shown
    return dict(out)


def usage_money(period: str, group_by: str, lines: list[Line] | None = None) -> dict[str, tuple] | None:
    """For the usage API's whole-month rows: key -> (shown cost, currency, unpriced GPU-hours) of
    the month's own allocated usage on the ledger, by team or by namespace; None for any other
    grouping (the ledger has no cluster or model figure of its own)."""
    if group_by not in ("team", "namespace"):
        return None
    lines = month_ledger(period).lines if lines is None else lines
    key_of = (lambda line: line.team or UNASSIGNED) if group_by == "team" else (lambda line: line.namespace)
    return {key: (*money.single, shown_hours(money.unpriced_seconds))
            for key, money in money_by(lines, key_of, OWN_USAGE).items()}


__all__ = ["month_ledger", "money_by", "usage_money", "Money", "OWN_USAGE"]
