"""Each team's month-end forecast (docs/forecast.md), fed from the usage rollups and the rate card.

The amounts the pure model (`forecast.py`) projects are the team's usage as the chargeback
prices it: the cells of `usage_cells`, priced per currency by `pricing.price_cells_by_currency`
(the statement's `line_sums` × the rate in force on each day), so the month to date here is the
team's usage lines on the open statement, and the budget's "spent". Or, for a GPU-hour budget,
the allocated GPU-hours (`figures.shown_hours`). Adjustment lines (late data of closed months)
are corrections of earlier months and are not projected.

One function (`forecast_payload`) turns a month's forecasts into what the API, the team page
and the chargeback page show.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone as dt_timezone
from decimal import Decimal

from django.utils import timezone

from .calc import RateCard, last_day, period_bounds, present
from .days import day_of, day_start
from .figures import shown_hours
from .forecast import LOOKBACK_DAYS, Forecast, days_left, forecast
from .pricing import load_rate_card, price_cells_by_currency
from .usage import UsageFilter, billing_zone, group_key, usage_cells

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


def month_forecast(period: str, *, now: datetime | None = None, teams: set[str] | None = None,
                   cluster: str | None = None, unit: str = MONEY, card: RateCard | None = None,
                   cells: list | None = None) -> MonthForecast:
    """Every team's forecast for a running month (`teams`: a team lead's scope; None: all).
    NotRunning for a month that has not started or has ended. `cells`: usage cells already read
    for these teams and clusters up to `now` from at least 14 days before today and the month's
    start (the team page reads last month and this one once for both its tables)."""
    zone = billing_zone()
    as_of = now or timezone.now()
    if not is_running(period, as_of):
        start = period_bounds(period, zone)[0]
        when = "has not started yet" if as_of < start else "has ended: its cost is on its statement"
        raise NotRunning(f"period={period!r} {when}; a forecast is made for the running month only")
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
    month_first = first.astimezone(zone).date()
    card = card or load_rate_card()
    out = []
    for team, days in sorted(per_team_day.items()):
        month_cells = [c for d, cs in days.items() if d >= month_first for c in cs]
        if unit == GPU_HOURS:
            out.append(_gpu_hours(team, days, month_cells, today, left, period))
        else:
            out.extend(_money(team, days, month_cells, today, left, period, card))
    return MonthForecast(period=period, as_of=as_of, today=today, today_left=left, last_day=last_day(period),
                         unit=unit, teams=out)


def _hours(cells) -> Decimal:
    return Decimal(str(shown_hours(sum(c.gpu_seconds for c in cells))))


def _gpu_hours(team, days, month_cells, today, left, period) -> TeamForecast:
    amounts = {d: _hours(cs) for d, cs in days.items() if d < today}
    return TeamForecast(team, None, forecast(_hours(month_cells), amounts, today, left, last_day(period)))


def _money(team, days, month_cells, today, left, period, card) -> list[TeamForecast]:
    spent, unpriced_seconds = price_cells_by_currency(month_cells, card)
    unpriced = shown_hours(unpriced_seconds)
    daily = {d: price_cells_by_currency(cs, card)[0] for d, cs in days.items() if d < today}
    currencies = sorted(set(spent) | {cur for costs in daily.values() for cur in costs})
    if not currencies:
        return [TeamForecast(team, None, None, unpriced)]
    return [TeamForecast(team, cur, forecast(spent.get(cur, Decimal(0)),
                                             {d: costs.get(cur, Decimal(0)) for d, costs in daily.items()},
                                             today, left, last_day(period)), unpriced)
            for cur in currencies]


# ---------------------------------------------------------------- as shown

def _iso(instant: datetime) -> str:
    return instant.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z")


def _shown(amount: Decimal, currency: str | None):
    """Money as a decimal string in the currency's minor unit; GPU-hours as a number (6 places)."""
    return present(amount, currency) if currency else round(float(amount), 6)


def team_row(t: TeamForecast, unit: str = MONEY) -> dict:
    f, cur = t.forecast, t.currency
    row = {"team": t.team, "currency": cur}
    for name in ("month_to_date", "projected", "low", "high"):
        row[name] = _shown(getattr(f, name), cur) if f else None
    row["weekday_daily"] = _shown(f.weekday.mean, cur) if f else None
    row["weekend_daily"] = _shown(f.weekend.mean, cur) if f else None
    row["history_days"] = f.history_days if f else 0
    row["unpriced_gpu_hours"] = t.unpriced_gpu_hours
    if f is not None:
        row["note"] = None
    elif unit == MONEY and cur is None:
        row["note"] = "no priced usage: nothing to project"
    else:
        row["note"] = f"no usage in the last {LOOKBACK_DAYS} complete days: too new to project"
    return row


def forecast_payload(month: MonthForecast) -> dict:
    """The forecasts as the API answers them and the pages show them: amounts as decimal strings
    in the currency's minor unit (GPU-hours as numbers), the days left as numbers."""
    left = days_left(month.today, month.today_left, month.last_day)
    return {
        "period": month.period,
        "as_of": _iso(month.as_of),
        "unit": month.unit,
        "lookback_days": LOOKBACK_DAYS,
        "weekdays_left": round(float(left.weekdays), 6),
        "weekend_days_left": round(float(left.weekend_days), 6),
        "results": [team_row(t, month.unit) for t in month.teams],
    }


def forecasts_by_team(payload: dict) -> dict[str, list[dict]]:
    """team -> its rows (one per currency), for the pages' tables."""
    out: dict[str, list[dict]] = defaultdict(list)
    for row in payload["results"]:
        out[row["team"]].append(row)
    return dict(out)
