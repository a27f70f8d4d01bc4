"""Each team's month-end forecast (docs/forecast.md), fed from the usage rollups, the rate card
and the month's ledger.

What is projected is GPU-seconds per statement line (cluster × namespace × GPU model × MIG
profile × price class) of the namespaces the team owns at the ingest watermark; each day left
is priced at the rate in force that day (`core.ratecard.RateCard`, a future-dated rate included), so a
price change is in the forecast from its day on. The month to date is the team's money on the
month's ledger (`ledger.py`: the statement's figure, adjustments included), the budget's
"spent", and the range never starts below it. Or, for a GPU-hour budget, the allocated GPU-hours
(`core.measures.shown_hours`). Days are counted from the ingest watermark (`data_instant`), not the
clock.

The forecasts here are data (Decimals, per team and currency); `apps/reports/forecast_rows.py`
turns them into what the API, the team page and the chargeback page show.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import NamedTuple

from django.utils import timezone

from apps.accounting.stored.versions import read_once
from apps.accounting.core.periods import last_day, period_bounds
from apps.accounting.core.ratecard import BASIS_PROFILE, RateCard, billed_cost, to_decimal
from apps.accounting.calendar.zone import day_of, day_start
from apps.accounting.core.measures import shown_hours
from apps.accounting.forecast.model import LOOKBACK_DAYS, Forecast, forecast_by_day, history
from apps.accounting.pricing.rates import load_rate_card, price_cells_by_currency
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.usage.cells import UsageFilter, group_key, usage_cells

MONEY = "money"
GPU_HOURS = "gpu_hours"


class NotRunning(ValueError):
    """A month that has not started, or has ended: it has no forecast (an ended month's cost is
    its statement)."""


@dataclass
class TeamForecast:
    team: str
    currency: str | None          # None: GPU-hours, or a team none of whose usage is priced
    forecast: Forecast | None     # None: no usage in the lookback days (too new to project)
    unpriced_gpu_hours: float = 0.0
    booked: Decimal | None = None   # without a forecast: its money on the month's ledger all the same


@dataclass
class MonthForecast:
    period: str
    as_of: datetime
    today: date
    today_left: Decimal
    last_day: date
    unit: str
    teams: list[TeamForecast]


def is_running(period: str, now: datetime | None = None) -> bool:
    start, end = period_bounds(period, billing_zone())
    now = now or timezone.now()
    return start <= now < end


def today_and_rest(as_of: datetime) -> tuple[date, Decimal]:
    """The billing day of `as_of` and the share of it still to come (a 23- or 25-hour DST day
    is still one day: 12 of its 23 hours left is 12/23)."""
    zone = billing_zone()
    today = day_of(as_of, zone)
    start, end = day_start(today, zone), day_start(today + timedelta(days=1), zone)
    left = Decimal(int((end - as_of).total_seconds())) / Decimal(int((end - start).total_seconds()))
    return today, left


def data_instant(period: str, clock: datetime, cluster: str | None = None) -> datetime:
    """The instant the forecast stands at: the ingest watermark (the earliest `ingested_until` of
    the clusters that have one, or of `cluster`), never after the clock nor before the month's
    start. While nothing arrives the forecast stays where the data stops, instead of counting
    days as gone that it has no usage for (docs/forecast.md)."""
    marks = watermarks()
    as_of = min([clock, *(at for name, at in marks.items() if not cluster or name == cluster)])
    return max(as_of, period_bounds(period, billing_zone())[0])


def watermarks() -> dict[str, datetime]:
    """Cluster name → its ingest watermark (`ingested_until`), of the clusters that have one."""
    return {c.name: c.ingested_until for c in cluster_marks() if c.ingested_until is not None}


class ClusterMark(NamedTuple):
    pk: int
    name: str
    ingested_until: datetime | None


def cluster_marks() -> list[ClusterMark]:
    """Every cluster's id, name and ingest watermark (None before its first ingest), by name;
    read once within `stored.versions.versions_read_once` (a page asks in several parts: the freshness
    line, the forecast, the advice's windows)."""
    from apps.clusters.models import Cluster

    return list(read_once("cluster marks", lambda: [ClusterMark(*row) for row in
                                                    Cluster.objects.order_by("name").values_list(
                                                        "pk", "name", "ingested_until")]))


LineKey = tuple     # (cluster id, namespace, GPU model, MIG profile, price class): a statement line's usage


def month_forecast(period: str, *, now: datetime | None = None, teams: set[str] | None = None,
                   cluster: str | None = None, unit: str = MONEY, card: RateCard | None = None,
                   cells: list | None = None, booked: dict | None = None) -> MonthForecast:
    """Every team's forecast for a running month (`teams`: a team lead's scope; None: all).
    NotRunning for a month that has not started or has ended. `cells`: usage cells already read
    for these teams and clusters up to `now` from at least 14 days before today and the month's
    start (the team page reads last month and this one once for both its tables).

    The model (docs/forecast.md): GPU-seconds per statement line are projected, each day left
    priced at the rates in force that day; days are counted from the ingest watermark
    (`data_instant`); a team projects only the namespaces it owns at that instant (none: no more
    spending); the month to date is the team's money on the month's ledger."""
    zone = billing_zone()
    clock = now or timezone.now()
    if not is_running(period, clock):
        start = period_bounds(period, zone)[0]
        when = "has not started yet" if clock < start else "has ended: its cost is on its statement"
        raise NotRunning(f"period={period!r} {when}; a forecast is made for the running month only")
    as_of = data_instant(period, clock, cluster)
    today, left = today_and_rest(as_of)
    first = period_bounds(period, zone)[0]
    history_start = min(first, day_start(today - timedelta(days=LOOKBACK_DAYS), zone))
    if cells is None:
        cells = usage_cells(UsageFilter(start=history_start, end=as_of, cluster=cluster,
                                        teams=frozenset(teams) if teams is not None else None))
    else:
        first_day = day_of(history_start, zone)
        cells = [c for c in cells if c.day >= first_day]
    per_team_day: dict[str, dict[date, list]] = defaultdict(lambda: defaultdict(list))
    for c in cells:
        if c.namespace:
            per_team_day[group_key(c, "team")][c.day].append(c)
    owner = _owners(cells, as_of)
    month_first = first.astimezone(zone).date()
    card = card or load_rate_card()
    if unit != MONEY:
        booked = {}
    elif booked is None:        # `booked`: team -> {currency: money on the ledger}, when already read
        booked = _booked(period, teams, cluster)
    out = []
    for team in sorted(set(per_team_day) | set(booked)):
        days = per_team_day.get(team, {})
        month_cells = [c for d, cs in days.items() if d >= month_first for c in cs]
        history_days = _history(days, today, lambda c, team=team: owner.get((c.cluster_id, c.namespace)) == team)
        goes_on = any(t == team for t in owner.values())
        if unit == GPU_HOURS:
            out.append(_gpu_hours(team, history_days, month_cells, today, left, period, goes_on))
        else:
            out.extend(_money(team, history_days, month_cells, booked.get(team, {}), today, left, period, card,
                              goes_on))
    return MonthForecast(period=period, as_of=as_of, today=today, today_left=left, last_day=last_day(period),
                         unit=unit, teams=out)


def _owners(cells, as_of: datetime) -> dict[tuple[int, str], str]:
    """(cluster id, namespace) -> its team at `as_of`, for the namespaces the cells are on."""
    from apps.accounting.usage.team_mapping import team_resolver
    keys = {(c.cluster_id, c.namespace) for c in cells if c.namespace}
    if not keys:
        return {}
    resolver = team_resolver({k[0] for k in keys})
    day = day_of(as_of, billing_zone())
    return {k: resolver.team(k[0], k[1], day, as_of) for k in keys}


def _history(days: dict[date, list], today: date, owned) -> list[tuple[date, dict]]:
    """The forecast's history (`forecast.model.history`) of a team: per complete day of the lookback,
    the GPU-seconds and MIG instance-seconds of each line whose namespace it still owns."""
    vectors: dict[date, dict[LineKey, list]] = {}
    activity: dict[date, Decimal] = {}
    for d, cs in days.items():
        if d >= today:
            continue
        v: dict[LineKey, list] = {}
        for c in cs:
            if not owned(c):
                continue
            acc = v.setdefault((c.cluster_id, c.namespace, c.gpu_model, c.mig_profile, c.price_class), [0.0, 0.0])
            acc[0] += c.gpu_seconds
            acc[1] += c.mig_seconds
        vectors[d] = v
        activity[d] = Decimal(str(sum(a[0] for a in v.values())))
    return [(d, vectors.get(d, {})) for d, _ in history(activity, today)]


def _booked(period: str, teams, cluster) -> dict[str, dict[str, Decimal]]:
    """team -> {currency: its money on the month's ledger} (usage and adjustments, as shown)."""
    from apps.accounting.ledger.money import money_by
    from apps.accounting.ledger.statements import statement
    lines = [line for line in statement(period).lines
             if line.team and (teams is None or line.team in teams) and (not cluster or line.cluster == cluster)]
    return {team: dict(m.costs) for team, m in money_by(lines, lambda line: line.team).items() if m.costs}


def _hours(cells) -> Decimal:
    return Decimal(str(shown_hours(sum(c.gpu_seconds for c in cells))))


def _gpu_hours(team, history_days, month_cells, today, left, period, goes_on) -> TeamForecast:
    if not history_days and goes_on:
        return TeamForecast(team, None, None)

    def hours_of(_day, v):
        return Decimal(str(shown_hours(sum(a[0] for a in v.values()))))
    return TeamForecast(team, None, forecast_by_day(_hours(month_cells), history_days, hours_of, today, left,
                                                    last_day(period), goes_on=goes_on))


def _money(team, history_days, month_cells, booked, today, left, period, card, goes_on) -> list[TeamForecast]:
    _spent, unpriced_seconds = price_cells_by_currency(month_cells, card)
    unpriced = shown_hours(unpriced_seconds)
    prices: dict[tuple, tuple | None] = {}
    # The rates in force are the same on every day of an epoch of the card (`RateCard.epoch`):
    # a line's rate is looked up once per epoch, and each history day is priced once per currency
    # and epoch, not once per day left (the same Decimals either way).
    epoch = getattr(card, "epoch", None) or (lambda day: day)

    def rate_on(key: LineKey, day: date):
        found = prices.get((key[2:], epoch(day)), False)
        if found is False:
            hit = card.lookup(key[2], key[3], key[4], day)
            found = prices[(key[2:], epoch(day))] = (hit[0].hourly_rate, hit[0].currency, hit[1]) if hit else None
        return found

    values: dict[tuple, Decimal] = {}

    def value_in(currency):
        def value_on(day: date, v: dict) -> Decimal:
            memo = (currency, epoch(day), id(v))
            total = values.get(memo)
            if total is not None:
                return total
            total = Decimal(0)
            for key, (gpu_s, mig_s) in v.items():
                rate = rate_on(key, day)
                if rate is not None and rate[1] == currency:
                    total += billed_cost(rate[0], to_decimal(mig_s if rate[2] == BASIS_PROFILE else gpu_s))
            values[memo] = total
            return total
        return value_on

    last = last_day(period)
    # Every currency a projected day is priced in: the rates in force on each day left, not only
    # today's (a rate in another currency from the 30th projects the 30th in it, docs/forecast.md).
    days_left = [today + timedelta(days=i) for i in range((last - today).days + 1)]
    keys = {key for _d, v in history_days for key in v}
    seen = {rate[1] for key in keys for day in days_left if (rate := rate_on(key, day)) is not None}
    currencies = sorted(set(booked) | seen)
    if not currencies:
        return [TeamForecast(team, None, None, unpriced)]
    if not history_days and goes_on:
        return [TeamForecast(team, cur, None, unpriced, booked.get(cur, Decimal(0))) for cur in currencies]
    return [TeamForecast(team, cur, forecast_by_day(booked.get(cur, Decimal(0)), history_days, value_in(cur),
                                                    today, left, last, goes_on=goes_on), unpriced)
            for cur in currencies]
