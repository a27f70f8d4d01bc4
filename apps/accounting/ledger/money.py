"""A month's money as the views split it: by team, by namespace, by day, and the hours that
arrived after a close (docs/chargeback.md, "One month, one answer").

Every figure here is cut from the month's statement (`ledger.statements.statement`, the one read of a
month): for a closed month its frozen
lines, for an open month its live lines with the adjustments for the closed months before it,
rounded once as a whole (`rounding.shown_amounts`). Every view of a whole month's money — the
chargeback page and API, the usage API's month rows by team or namespace, the team page's
months, the overview, budget alerts — reads its figures from here, so a month shows one
figure per team and per namespace wherever it is looked at.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

import orjson


from apps.accounting.core.lines import Line
from apps.accounting.core.periods import next_period, period_of
from apps.accounting.core.ratecard import billed_cost
from apps.accounting.core.rounding import apportion, present
from apps.accounting.core.measures import shown_hours
from apps.accounting.ledger.daily_money import focus_month, line_key
from apps.accounting.ledger.frozen import month_cells
from apps.accounting.stored.responses import body
from apps.accounting.stored.versions import read_inputs, stored_answers
from apps.accounting.ledger.answer import closed_periods, month_late_cells, statement_version
from apps.accounting.ledger.as_billed import pieces
from apps.accounting.ledger.statements import statement
from apps.accounting.usage.cells import UNASSIGNED, UsageFilter

OWN_USAGE = ("usage",)           # a team's own allocated usage of the month (no adjustments, no idle)


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


def closed_money_by_day(period: str, teams=None) -> dict | None:
    """A closed month's own usage money day by day, from its frozen statement: each line's shown
    cost split over its frozen days in the currency's minor unit (`core.rounding.apportion`, as the FOCUS
    rows split it), so the days add up to the statement to the cent, and a day's hours that
    arrived after the close cost nothing in this month (they are billed where `late_hours`
    says). None for a month that is not closed: its days are priced from their hours
    (docs/chargeback.md, "One month, one answer")."""
    month = focus_month(period)
    if not month.closed:
        return None
    out: dict = defaultdict(lambda: Money(defaultdict(Decimal), Decimal(0)))
    for line in month.lines:
        if line.kind not in OWN_USAGE or line.adjusts_period or (teams is not None and line.team not in teams):
            continue
        days = month.days.get(line_key(line)) or []
        if line.cost is None:
            for d in days:
                out[d.day].unpriced_seconds += d.allocated_gpu_seconds
            continue
        costs = apportion(line.shown, [billed_cost(line.hourly_rate, d.billed_seconds) for d in days], line.currency)
        for d, cost in zip(days, costs):
            out[d.day].costs[line.currency] += cost
    return dict(out)


@dataclass
class UsageMoney:
    """A whole month's money by team or namespace as its ledger has it, for rows of usage.

    `rows`: key -> (shown cost, currency, unpriced GPU-hours) of the key's own usage lines. A
    closed month's rows are read as billed (`ledger.as_billed`: its frozen days, so the keys and
    hours its statement priced); its money is the frozen statement's alone (docs/chargeback.md,
    "Closed on every view")."""
    closed: bool
    rows: dict[str, tuple]

    def price(self, key: str, live: tuple | None) -> tuple | None:
        """The row's (cost, currency, unpriced GPU-hours): the ledger's; live when the month is
        open and the ledger has none; nothing billed here when it is closed."""
        if key in self.rows:
            return self.rows[key]
        if not self.closed or live is None or live[1] is None:
            return live
        return (present(Decimal(0), live[1]), live[1], 0.0)


def usage_money(period: str, group_by: str, teams=None, lines: list[Line] | None = None) -> UsageMoney | None:
    """For whole-month rows of usage by team or by namespace (the usage API, the team page): the
    month's own allocated usage on the ledger of `teams` (None: all), `UsageMoney`; None for any
    other grouping (rows by cluster or model are priced from their hours)."""
    if group_by not in ("team", "namespace"):
        return None
    stmt = statement(period) if lines is None else None
    lines = stmt.lines if lines is None else lines
    lines = [line for line in lines if teams is None or line.team in teams]
    key_of = (lambda line: line.team or UNASSIGNED) if group_by == "team" else (lambda line: line.namespace)
    closed = stmt.closed if stmt is not None else period in closed_periods()
    return UsageMoney(closed, {key: (*money.single, shown_hours(money.unpriced_seconds))
                               for key, money in money_by(lines, key_of, OWN_USAGE).items()})


@dataclass(frozen=True)
class LateHours:
    """GPU-hours of a closed month that arrived after its close, and the month they are billed in."""
    billed_in: str
    gpu_hours: float
    pending: bool               # not booked yet: on the open month's statement, until it closes
    unallocated_gpu_hours: float = 0.0   # of them, capacity no pod held (counted for every team only)


def late_hours(period: str, teams: set[str] | None = None, cluster: str | None = None,
               days: tuple[date, date] | None = None) -> list[LateHours]:
    """For a closed month, the allocated GPU-hours that arrived (or vanished, negative) after its
    close, per month they were billed in: those booked by later closes, then those waiting in the
    first open month after it. Empty for an open month, or when live usage is what was frozen.
    `days` (first, last): only those of its days. Every team's or one team's of every cluster and
    day: from the month's late hours per team, stored at the version of its late data
    (`late_by_team`); any other scope is summed live."""
    closed = closed_periods()
    bp = closed.get(period)
    if bp is None:
        return []
    if cluster is None and days is None and (teams is None or len(teams) == 1):
        kept = late_by_team(period, closed)
        if kept is not None:
            return _late_of(kept, None if teams is None else next(iter(teams)))
    return _late_live(period, closed, teams, cluster, days)


@dataclass(frozen=True)
class WindowLate:
    """The late hours of a closed month whose frozen days a window shows (`window_late`)."""
    period: str
    whole: bool                 # the window shows the whole month
    first: date
    last: date
    late: list[LateHours]


def window_late(f: UsageFilter) -> list[WindowLate]:
    """Per closed month a window shows frozen days of (`ledger.as_billed`, rule 2), the hours of those
    days that arrived after its close and where they were billed, for the window's teams and
    cluster: the note beside a closed month's money on every page that shows it
    (docs/chargeback.md, "Windows across a close")."""
    out = []
    for p in pieces(f):
        if p.bp is None or not p.whole:
            continue
        first, last = p.days[0], p.days[-1]
        whole = (first.day == 1 and period_of(last + timedelta(days=1)) != p.bp.period)
        late = late_hours(p.bp.period, None if f.teams is None else set(f.teams), f.cluster,
                          None if whole else (first, last))
        if late:
            out.append(WindowLate(p.bp.period, whole, first, last, late))
    return out


def _late_live(period: str, closed: dict, teams: set[str] | None, cluster: str | None,
               days: tuple[date, date] | None = None) -> list[LateHours]:
    by_month: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    pending = [0.0, 0.0]
    for billed_in, team, cluster_name, seconds, unallocated, day in _late_cells(period, closed[period]):
        if days is not None and not days[0] <= day <= days[1]:
            continue
        if (teams is None or (team and team in teams)) and (not cluster or cluster_name == cluster):
            sums = pending if billed_in is None else by_month[billed_in]
            sums[0] += seconds
            if unallocated:
                sums[1] += seconds
    return _late_list(by_month, pending, _first_open(period, closed))


def _late_cells(period: str, bp):
    """(the month that booked it or None while pending, team, cluster, GPU-seconds, whether it is
    capacity no pod held, day) of each late cell of the closed month — the cells later closes booked,
    then those waiting — in the order every sum of them adds them (`_late_live`,
    `late_by_team`). Every adjusted hour counts, unallocated capacity too: the note adds up to
    the adjustments the later month bills (docs/chargeback.md, "One month, one answer")."""
    for _period, billed_in, cell in month_cells(bp, "late"):
        yield billed_in, cell.team, cell.cluster, cell.gpu_seconds, not cell.namespace, cell.day
    for cell in month_late_cells(period, bp):
        yield None, cell.team, cell.cluster, cell.gpu_seconds, not cell.namespace, cell.day


def _late_list(by_month: dict, pending, first_open: str) -> list[LateHours]:
    """The late hours shown: per month that booked them, then those pending in `first_open`;
    each sum is [GPU-seconds, of them unallocated]."""
    out = [LateHours(month, shown_hours(sums[0]), False, shown_hours(sums[1]))
           for month, sums in sorted(by_month.items()) if shown_hours(sums[0])]
    if shown_hours(pending[0]):
        out.append(LateHours(first_open, shown_hours(pending[0]), True, shown_hours(pending[1])))
    return out


def _first_open(period: str, closed: dict) -> str:
    first_open = next_period(period)
    while first_open in closed:
        first_open = next_period(first_open)
    return first_open


LATE_HOURS = "ledger-late?scope=all"     # its MonthBody key: a closed month's late hours per team


def late_by_team(period: str, closed: dict) -> dict | None:
    """A closed month's late GPU-seconds (`_late_cells`) of every team together and of each
    team: per month that booked them, and pending. Stored at the version of the month's late
    data — its cells' inputs and the frozen cells (`Inputs.delta`, as `month_late_cells`) and
    every month's close — so a team's page reads one small body, not the frozen cells; None
    where nothing is stored (SQLite). Every sum adds its cells in the order `_late_live` does,
    so the figures are the same floats."""
    if not stored_answers():
        return None
    closes = ",".join(f"{p}@{closed[p].closed_at.isoformat()}" for p in sorted(closed))
    version = f"{read_inputs([period]).delta(period)}|closes {closes}|with unallocated"

    def render() -> bytes:
        # team (None: every team and the unallocated capacity) -> (per booking month, pending),
        # each a sum [GPU-seconds, of them unallocated]
        sums = {None: ({}, [0.0, 0.0])}
        for billed_in, team, _cluster, seconds, unallocated, _day in _late_cells(period, closed[period]):
            for key in ((None, team) if team else (None,)):
                by_month, pending = sums.setdefault(key, ({}, [0.0, 0.0]))
                target = pending if billed_in is None else by_month.setdefault(billed_in, [0.0, 0.0])
                target[0] += seconds
                if unallocated:
                    target[1] += seconds
        every = sums.pop(None)
        return orjson.dumps({"first_open": _first_open(period, closed), "every": every, "teams": sums})
    return orjson.loads(body(period, LATE_HOURS, version, render))


def _late_of(kept: dict, team: str | None) -> list[LateHours]:
    """`late_hours` of every team (None) or of one, from `late_by_team`."""
    by_month, pending = kept["every"] if team is None else kept["teams"].get(team, ({}, [0.0, 0.0]))
    return _late_list(by_month, pending, kept["first_open"])


def team_month(period: str, team: str, cluster: str | None = None) -> dict:
    """A team's month as its ledger shows it: allocated GPU-hours of its own usage lines, cost
    (usage and adjustments, one currency, else None with `costs_by_currency`), the adjustments'
    part, unpriced GPU-hours, whether the month is closed, and its late hours (`late_hours`).
    Every cluster's: from the month's team figures stored at the statement's version
    (`team_months`), so a team's month reads one small body, not the month's lines."""
    kept = team_months(period) if not cluster else None
    if kept is not None:
        closed, teams = kept
        out = _figures_back(orjson.loads(teams[team])) if team in teams else _team_figures(team, [])
    else:
        stmt = statement(period)
        closed = stmt.closed
        out = _team_figures(team, [line for line in stmt.lines
                                   if line.team == team and (not cluster or line.cluster == cluster)])
    # late hours follow ingest into a closed month, which its statement's version does not: live
    return {"period": period, "closed": closed, **out, "late": late_hours(period, {team}, cluster) if closed else []}


TEAM_MONTHS = "ledger-teams?scope=all"      # its MonthBody key: every team's figures of the month


def team_months(period: str) -> tuple[bool, dict[str, str]] | None:
    """(closed, team → its figures as JSON text) of the month's statement, stored at the
    statement's version (`ledger.answer.statement_version`: rendered from the lines read after it, so
    never served stale); None where nothing is stored (SQLite). Each team's figures are a JSON
    string of their own, so that a reader of one team parses 250 short strings and one team's
    figures, not every team's (0.13 → 0.03 ms a month)."""
    version = statement_version(period)
    if version is None:
        return None

    def render() -> bytes:
        stmt = statement(period)
        by_team: dict[str, list[Line]] = defaultdict(list)
        for line in stmt.lines:
            if line.team:
                by_team[line.team].append(line)
        return json.dumps({"closed": stmt.closed, "teams": {
            team: json.dumps(_figures_json(_team_figures(team, lines))) for team, lines in by_team.items()}}).encode()
    data = orjson.loads(body(period, TEAM_MONTHS, version, render))
    return data["closed"], data["teams"]


def _team_figures(team: str, lines: list[Line]) -> dict:
    money = money_by(lines, lambda line: team).get(team, Money({}, Decimal(0)))
    adjustments = money_by(lines, lambda line: team, ("adjustment",)).get(team, Money({}, Decimal(0)))
    cost, currency = money.single
    allocated = sum((line.allocated_gpu_seconds for line in lines if line.kind == "usage"), Decimal(0))
    return {
        "allocated_gpu_hours": shown_hours(allocated),
        "cost": cost, "currency": currency,
        "costs_by_currency": {c: present(a, c) for c, a in sorted(money.costs.items())},
        "adjustments": present(adjustments.costs.get(currency, Decimal(0)), currency) if currency else None,
        "adjusted_periods": sorted({line.adjusts_period for line in lines if line.kind == "adjustment"}),
        "unpriced_gpu_hours": shown_hours(money.unpriced_seconds),
        "money": dict(money.costs),         # currency -> shown Decimal, for the forecast's month to date
    }


def _figures_json(figures: dict) -> dict:
    """JSON values: Decimals as their exact text, floats as floats (their shortest repr)."""
    return {**figures, "money": {c: str(a) for c, a in figures["money"].items()}}


def _figures_back(data: dict) -> dict:
    return {**data, "money": {c: Decimal(a) for c, a in data["money"].items()}}


__all__ = ["money_by", "UsageMoney", "closed_money_by_day", "usage_money", "late_hours", "window_late", "WindowLate", "late_by_team", "team_month", "team_months", "Money", "LateHours", "OWN_USAGE"]
