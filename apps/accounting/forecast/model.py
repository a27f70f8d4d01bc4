"""Month-end forecast: where a team's month will end if it goes on as it has lately.

Plain Python, no Django (docs/forecast.md has the model and a worked example). The amounts are
whatever the caller measures per billing day — the cost of a team's usage in one currency, or
its allocated GPU-hours — as Decimals; nothing here rounds. The model, weekday/weekend aware:

- *History*: the last `lookback_days` complete billing days before today, from the first of
  them with any amount on (a team that began last Tuesday is not averaged with days it did
  not exist); a day inside that stretch with no usage counts 0.
- *Run rates*: the mean amount of the history's weekdays (Monday-Friday) and of its weekend
  days, with their lowest and highest day. A kind with no day in the history (a team that
  began on Monday, seen on Thursday) borrows the figures of all history days.
- *Days left*: the part of today still to come (a fraction: 0.5 at noon, of a 23- or 25-hour
  day on a DST change) plus every later day of the month, split into weekdays and weekend days.
- *Projected* = month to date + weekdays left × weekday mean + weekend days left × weekend mean;
  the range puts the lowest (highest) day of each kind in place of its mean.
A month with no day left projects its month to date; no history gives no forecast (None).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

WEEKEND_DAYS = (5, 6)           # date.weekday(): Saturday, Sunday
LOOKBACK_DAYS = 14              # two weeks: ten weekdays and four weekend days
ZERO = Decimal(0)


def is_weekend(day: date) -> bool:
    return day.weekday() in WEEKEND_DAYS


@dataclass(frozen=True)
class RunRate:
    """Per day of one kind (weekdays or weekend days) in the history."""
    mean: Decimal
    low: Decimal
    high: Decimal
    days: int                   # history days of this kind (0: borrowed from all days)


@dataclass(frozen=True)
class DaysLeft:
    weekdays: Decimal           # today's rest counts as a fraction of a day of its kind
    weekend_days: Decimal


@dataclass(frozen=True)
class Forecast:
    month_to_date: Decimal
    projected: Decimal
    low: Decimal
    high: Decimal
    weekday: RunRate
    weekend: RunRate
    days_left: DaysLeft
    history_days: int
    # Each day still to come with the mean amount a whole day of it adds (`forecast_by_day`:
    # the day's own rates); empty for `forecast`, whose days all add their kind's mean.
    path: tuple[tuple[date, Decimal], ...] = ()


def history(amounts: dict[date, Decimal], today: date, lookback_days: int = LOOKBACK_DAYS) -> list[tuple[date, Decimal]]:
    """The complete days [today - lookback_days, today), from the first with a non-zero amount
    on, with the days that have none as 0. Empty when no day of the window has any amount."""
    days = [today - timedelta(days=lookback_days - i) for i in range(lookback_days)]
    first = next((i for i, d in enumerate(days) if amounts.get(d, ZERO) != ZERO), None)
    if first is None:
        return []
    return [(d, amounts.get(d, ZERO)) for d in days[first:]]


def _rate(values: list[Decimal], borrowed: list[Decimal]) -> RunRate:
    pool = values or borrowed
    return RunRate(mean=sum(pool, ZERO) / len(pool), low=min(pool), high=max(pool), days=len(values))


def run_rates(days: list[tuple[date, Decimal]]) -> tuple[RunRate, RunRate]:
    """(weekday rate, weekend rate) of a non-empty history."""
    everything = [a for _, a in days]
    weekdays = [a for d, a in days if not is_weekend(d)]
    weekend = [a for d, a in days if is_weekend(d)]
    return _rate(weekdays, everything), _rate(weekend, everything)


def days_left(today: date, today_left: Decimal, last_day: date) -> DaysLeft:
    """What is left of the month after the forecast's instant: `today_left` (0-1) of today, and
    every day after it up to `last_day`. A month already over (today after its last day) has none."""
    weekdays = weekend = ZERO
    if today > last_day:
        return DaysLeft(ZERO, ZERO)
    day, part = today, today_left
    while day <= last_day:
        if is_weekend(day):
            weekend += part
        else:
            weekdays += part
        day, part = day + timedelta(days=1), Decimal(1)
    return DaysLeft(weekdays, weekend)


def forecast(month_to_date: Decimal, amounts: dict[date, Decimal], today: date, today_left: Decimal,
             last_day: date, lookback_days: int = LOOKBACK_DAYS) -> Forecast | None:
    """The month-end forecast, or None when the history holds no amount at all."""
    days = history(amounts, today, lookback_days)
    if not days:
        return None
    weekday, weekend = run_rates(days)
    left = days_left(today, today_left, last_day)

    def project(wd: Decimal, we: Decimal) -> Decimal:
        return month_to_date + left.weekdays * wd + left.weekend_days * we

    return Forecast(month_to_date=month_to_date, projected=project(weekday.mean, weekend.mean),
                    low=project(weekday.low, weekend.low), high=project(weekday.high, weekend.high),
                    weekday=weekday, weekend=weekend, days_left=left, history_days=len(days))


def forecast_by_day(booked: Decimal, days: list[tuple[date, Any]], value_on: Callable[[date, Any], Decimal],
                    today: date, today_left: Decimal, last_day: date, *, goes_on: bool = True) -> Forecast:
    """The month-end forecast from a history whose days are valued per day still to come.

    `days` is the history (`history`: non-empty, from its first day with usage), each day as
    whatever the caller measured (a team's GPU-seconds per statement line); `value_on(d, h)` is
    what history day `h` would add were it day `d` (those seconds at the rates in force on `d`,
    a future-dated rate included). Each day left takes the values of the history days of its
    kind (all history days when its kind has none): their mean for the projection, their lowest
    and highest for the range. `booked` is the money already on the month's statement, so the
    range never starts below it. `goes_on=False` (the team owns nothing any more) projects no
    more days, with or without history: projected = low = high = booked. The run rates reported
    are at today's rates."""
    everything = [h for _, h in days]
    weekday_h = [h for d, h in days if not is_weekend(d)]
    weekend_h = [h for d, h in days if is_weekend(d)]
    rest = [ZERO, ZERO, ZERO]
    path = []
    day, part = today, today_left
    while goes_on and day <= last_day:
        pool = (weekend_h if is_weekend(day) else weekday_h) or everything
        values = [value_on(day, h) for h in pool]
        mean = sum(values, ZERO) / len(values)
        for i, v in enumerate((mean, min(values), max(values))):
            rest[i] += part * v
        path.append((day, mean))
        day, part = day + timedelta(days=1), Decimal(1)
    at_today = [value_on(today, h) for h in everything] or [ZERO]
    weekday = _rate([value_on(today, h) for h in weekday_h], at_today)
    weekend = _rate([value_on(today, h) for h in weekend_h], at_today)
    left = days_left(today, today_left, last_day) if goes_on else DaysLeft(ZERO, ZERO)
    return Forecast(month_to_date=booked, projected=booked + rest[0], low=booked + max(rest[1], ZERO),
                    high=booked + max(rest[2], ZERO), weekday=weekday, weekend=weekend, days_left=left,
                    history_days=len(days), path=tuple(path))


def crossing_day(f: Forecast, limit: Decimal, today: date, today_left: Decimal, last_day: date) -> date | None:
    """The day the projected amount reaches `limit` at the mean rates: today when what is left of
    today covers it, else the first later day whose whole day does. None when the month ends
    first; today when the month to date has reached it already."""
    total = f.month_to_date
    if total >= limit:
        return today
    if f.path:      # each day at its own rates (`forecast_by_day`)
        part = today_left
        for day, mean in f.path:
            total += part * mean
            if total >= limit:
                return day
            part = Decimal(1)
        return None
    day, part = today, today_left
    while day <= last_day:
        total += part * (f.weekend.mean if is_weekend(day) else f.weekday.mean)
        if total >= limit:
            return day
        day, part = day + timedelta(days=1), Decimal(1)
    return None


__all__ = ["Forecast", "RunRate", "DaysLeft", "forecast", "forecast_by_day", "history", "run_rates", "days_left", "crossing_day",
           "LOOKBACK_DAYS", "is_weekend"]
