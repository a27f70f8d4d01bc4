"""A team's dashboard: its namespaces over time, efficiency, MIG hours, cost this month vs last,
quota, and the namespaces that moved to or from it."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal

from django.utils import timezone

from apps.accounting.core.periods import period_of

from apps.accounting.core.measures import efficiency, gpu_hours, hours_of
from apps.accounting.core.ratecard import BASIS_PROFILE, billed_cost, to_decimal
from apps.accounting.core.rounding import present
from apps.accounting.usage.shared_gpus import claim_parts, shared_parts
from apps.accounting.usage import reader as rollup_reader
from apps.accounting.usage.reader import HourTeams
from apps.accounting.ledger.as_billed import billed_cells
from apps.accounting.ledger.money import team_month
from apps.accounting.forecast.stored import stored_forecast
from apps.reports.forecast_rows import forecast_payload
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.usage.cells import UsageFilter, usage_cells
from apps.accounting.calendar.zone import day_of, day_start
from apps.accounting.usage.team_mapping import team_resolver
from apps.teams.resolve import TeamResolver
from apps.accounting.query.filters import ReportFilter


GPU_QUOTA_RESOURCE = "requests.nvidia.com/gpu"


def team_cells(sel: ReportFilter, team: str, resolver: TeamResolver | None = None, *, billed: bool = False):
    """The team's usage cells over the window; `billed`: as billed (`ledger.as_billed`: a closed
    month's days as its close froze them), for a page that shows money beside them."""
    f = UsageFilter(start=sel.start, end=sel.end, cluster=sel.cluster, teams=frozenset({team}))
    return billed_cells(f) if billed else usage_cells(f, resolver=resolver)


def namespace_series(cells) -> dict[str, list[tuple[date, float, float]]]:
    """namespace -> [(day, allocated GPU-hours, used GPU-hours)] in day order."""
    per = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    for c in cells:
        if c.allocated:
            v = per[c.namespace][c.day]
            v[0] += c.gpu_seconds
            v[1] += c.used_gpu_seconds
    return {ns: [(d, gpu_hours(a), gpu_hours(u)) for d, (a, u) in sorted(days.items())]
            for ns, days in sorted(per.items())}


def mig_hours(cells) -> dict[str, float]:
    seconds: dict[str, float] = defaultdict(float)
    for c in cells:
        if c.allocated and c.mig_profile:
            seconds[c.mig_profile] += c.mig_seconds
    return {profile: gpu_hours(s) for profile, s in sorted(seconds.items())}


@dataclass
class MonthCost:
    label: str
    start: datetime
    end: datetime
    allocated_gpu_hours: float
    cost: str | None
    currency: str | None
    priced: bool
    unpriced_gpu_hours: float = 0.0
    adjustments: str | None = None          # the part of cost that is late data of closed months
    adjusted_periods: list[str] = field(default_factory=list)
    closed: bool = False                    # the frozen statement's figures
    money: dict = field(default_factory=dict)   # currency -> shown Decimal (the forecast's month to date)
    late: list = field(default_factory=list)   # ledger.LateHours: hours that arrived after the close

    @property
    def by_currency(self) -> list[tuple[str, object]]:
        """(currency, shown amount) of each currency the month bills the team in, by code: a team
        billed in several shows each, never 'unpriced' (currencies are never added)."""
        return sorted(self.money.items())


def month_bounds(now: datetime) -> tuple[datetime, datetime, datetime]:
    """(last month's start, this month's start, now) in the billing zone, as aware datetimes."""
    zone = billing_zone()
    local = now.astimezone(zone)
    this_start = datetime.combine(local.date().replace(day=1), time.min, tzinfo=zone)
    last_start = datetime.combine((this_start.date() - timedelta(days=1)).replace(day=1), time.min, tzinfo=zone)
    return last_start, this_start, now


def month_costs(sel: ReportFilter, team: str, now: datetime | None = None) -> list[MonthCost]:
    """Month to date and last month for the team, as the month's ledger has them
    (`ledger.money.team_month`): the chargeback statement's figure (adjustments included, shown apart
    too), a closed month's frozen one with the hours that arrived after its close
    (docs/chargeback.md, "One month, one answer")."""
    last_start, this_start, now = month_bounds(now or timezone.now())
    zone = billing_zone()
    out = []
    for label, start, end in (("Month to date", this_start, now), ("Last month", last_start, this_start)):
        m = team_month(period_of(start.astimezone(zone).date()), team, sel.cluster)
        out.append(MonthCost(label, start, end, m["allocated_gpu_hours"], m["cost"], m["currency"], True,
                             unpriced_gpu_hours=m["unpriced_gpu_hours"], adjustments=m["adjustments"],
                             adjusted_periods=m["adjusted_periods"], closed=m["closed"], late=m["late"],
                             money=m["money"]))
    return out


def team_forecast(sel: ReportFilter, team: str, now: datetime | None = None) -> dict:
    """The running month's month-end forecast of the team (docs/forecast.md) as the API answers
    it: the team's rows of the fleet's stored forecast — the chargeback page's and
    `/api/v1/forecast/`'s; with a cluster picked, computed for that cluster."""
    now = now or timezone.now()
    period = period_of(now.astimezone(billing_zone()).date())
    return forecast_payload(stored_forecast(period, teams={team}, now=now, cluster=sel.cluster))


@dataclass
class QuotaUse:
    cluster_id: int
    namespace: str
    hard: float | None
    used_peak: float | None
    hours_at_hard: float


def quota_use(sel: ReportFilter, team: str, resolver: TeamResolver | None = None) -> list[QuotaUse]:
    """Per namespace: its GPU quota as the window's last day left it, the peak used (the most
    GPUs counted against the quota in any hour, as the quota advice says it) and the hours at
    the quota (docs/advice-and-alerts.md)."""
    rows = rollup_reader.quota_days(UsageFilter(start=sel.start, end=sel.end, cluster=sel.cluster,
                                                teams=frozenset({team})), GPU_QUOTA_RESOURCE, HourTeams(resolver))
    out: dict[tuple[int, str], QuotaUse] = {}
    for r in sorted(rows, key=lambda r: r["first"]):
        key = (r["cluster_id"], r["namespace"])
        q = out.get(key) or out.setdefault(key, QuotaUse(r["cluster_id"], r["namespace"], None, None, 0.0))
        if r["hard"] is not None:
            q.hard = r["hard"]   # the latest day's: the quota as it stands, as the advice reads it
        q.used_peak = _max(q.used_peak, r["used"])
        q.hours_at_hard += hours_of(r["at_hard"] or 0.0)
    return sorted(out.values(), key=lambda q: (q.namespace, q.cluster_id))


def _max(a, b):
    return b if a is None else a if b is None else max(a, b)


@dataclass
class NamespaceMove:
    cluster: str
    namespace: str
    at: datetime            # the team changed from this instant on
    from_team: str
    to_team: str
    source: str             # what decides the new team: a label or an admin mapping


MOVES_SHOWN = 20


def namespace_moves(sel: ReportFilter, team: str, resolver: TeamResolver | None = None) -> list[NamespaceMove]:
    """The latest moves of namespaces into or out of `team` up to the window's end, newest
    first: the resolved team (docs/teams-and-relabels.md) at every label change and mapping."""
    resolver, zone = resolver or team_resolver(), billing_zone()
    names = resolver.cluster_names
    # only a namespace that resolves to the team at some time can move into or out of it
    ours = resolver.namespaces_of({team})
    moves = []
    for cluster_id, ns in resolver.namespaces():
        if (sel.cluster and names.get(cluster_id) != sel.cluster) or (ours is not None and ns not in ours):
            continue
        instants = {t for t, _ in resolver.label_history(cluster_id, ns)}
        instants |= {day_start(d, zone) for d in resolver.mapping_dates(cluster_id, ns)}
        before = None
        for at in sorted(t for t in instants if t < sel.end):
            now, source = resolver.resolve(cluster_id, ns, day_of(at, zone), at)
            if before is not None and now != before and team in (before, now):
                moves.append(NamespaceMove(names.get(cluster_id, "?"), ns, at, before, now, source))
            before = now
    moves.sort(key=lambda m: (m.at, m.cluster, m.namespace), reverse=True)
    return moves[:MOVES_SHOWN]


@dataclass
class SharedGpuRow:
    """One row of the team page's "GPUs held in parts": a namespace's parts of split GPUs of one
    model and price class over the window (`usage.shared_gpus.shared_parts`), priced at the rate
    card in force each day, as the FOCUS 1.3 export's shared-GPU rows are."""
    cluster: str
    namespace: str
    gpu_model: str
    price_class: str
    kind: str
    allocated_gpu_hours: float
    used_gpu_hours: float
    efficiency: float | None
    remainder_gpu_hours: float
    cost: str | None = None            # in the currency's minor unit (`core.rounding.present`)
    remainder_cost: str | None = None
    currency: str = ""


def shared_gpu_rows(sel: ReportFilter, team: str, card=None,
                    resolver: TeamResolver | None = None) -> list[SharedGpuRow]:
    """The team's namespaces' parts of GPUs split between pods (HAMi shares, time-sliced GPUs, a DRA
    claim shared by pods) in the window; `card`: the rate card, when the user sees the money."""
    resolver = resolver or team_resolver()
    names = resolver.namespaces_of({team})
    if not names:       # none, or `unassigned` (any namespace nobody mapped or labelled)
        return []
    out = []
    for p in shared_parts(sel.start, sel.end, namespaces=frozenset(names), cluster=sel.cluster):
        row = SharedGpuRow(p.cluster, p.namespace, p.gpu_model, p.price_class, p.kind,
                           gpu_hours(p.gpu_seconds), gpu_hours(p.used_gpu_seconds),
                           efficiency(p.used_gpu_seconds, p.gpu_seconds), gpu_hours(p.remainder_seconds))
        if card is not None:
            rates = {day: card.lookup(p.gpu_model, "", p.price_class, day) for day in p.days}
            currencies = {found[0].currency for found in rates.values() if found}
            if len(currencies) == 1 and all(rates.values()):
                row.currency = currencies.pop()
                row.cost = present(sum((billed_cost(rates[d][0].hourly_rate, to_decimal(held))
                                        for d, (held, _rest) in p.days.items()), Decimal(0)), row.currency)
                row.remainder_cost = present(sum((billed_cost(rates[d][0].hourly_rate, to_decimal(rest))
                                                  for d, (_held, rest) in p.days.items()), Decimal(0)), row.currency)
        out.append(row)
    return out


@dataclass
class ClaimedGpuRow:
    """One row of the team page's "GPUs held through DRA claims": a namespace's GPUs or MIG devices
    allocated through ResourceClaims over the window (`usage.shared_gpus.claim_parts`), priced at
    the rate card in force each day (a MIG profile with its own rate per instance-hour)."""
    cluster: str
    namespace: str
    gpu_model: str
    mig_profile: str
    price_class: str
    allocated_gpu_hours: float
    used_gpu_hours: float
    efficiency: float | None
    cost: str | None = None
    currency: str = ""


def claimed_gpu_rows(sel: ReportFilter, team: str, card=None,
                     resolver: TeamResolver | None = None) -> list[ClaimedGpuRow]:
    resolver = resolver or team_resolver()
    names = resolver.namespaces_of({team})
    if not names:
        return []
    out = []
    for p in claim_parts(sel.start, sel.end, namespaces=frozenset(names), cluster=sel.cluster):
        row = ClaimedGpuRow(p.cluster, p.namespace, p.gpu_model, p.mig_profile, p.price_class,
                            gpu_hours(p.gpu_seconds), gpu_hours(p.used_gpu_seconds),
                            efficiency(p.used_gpu_seconds, p.gpu_seconds))
        if card is not None:
            rates = {day: card.lookup(p.gpu_model, p.mig_profile, p.price_class, day) for day in p.days}
            currencies = {found[0].currency for found in rates.values() if found}
            if len(currencies) == 1 and all(rates.values()):
                row.currency = currencies.pop()
                exact = Decimal(0)
                for day, (gpu, mig) in p.days.items():
                    entry, basis = rates[day]      # a MIG profile's own rate prices its instance-hours
                    exact += billed_cost(entry.hourly_rate, to_decimal(mig if basis == BASIS_PROFILE else gpu))
                row.cost = present(exact, row.currency)
        out.append(row)
    return out
