"""The month-end forecast's math (apps/accounting/forecast/model.py), by hand (docs/forecast.md).

November 2026 starts on a Sunday; the 18th is a Wednesday. A team spends $16 on each weekday
and $4 on each weekend day, except the history below varies it.
"""
from datetime import date, timedelta
from decimal import Decimal as D

from apps.accounting.forecast.model import crossing_day, days_left, forecast, history, run_rates

NOV = [date(2026, 11, 1) + timedelta(days=i) for i in range(30)]
TODAY = date(2026, 11, 18)
LAST = date(2026, 11, 30)


def steady(day: date) -> D:
    return D(4) if day.weekday() >= 5 else D(16)


def test_days_left_at_noon_of_a_wednesday():
    # the rest of the 18th (0.5), 19, 20, 23-27, 30 are weekdays; 21, 22, 28, 29 weekend days
    left = days_left(TODAY, D("0.5"), LAST)
    assert (left.weekdays, left.weekend_days) == (D("8.5"), D(4))


def test_days_left_on_a_saturday_morning_and_after_the_month():
    left = days_left(date(2026, 11, 28), D("0.75"), LAST)
    assert (left.weekdays, left.weekend_days) == (D(1), D("1.75"))   # Monday 30; 0.75 of Sat + Sun
    left = days_left(date(2026, 12, 1), D(1), LAST)
    assert (left.weekdays, left.weekend_days) == (D(0), D(0))


def test_steady_month_projects_exactly_its_total():
    # Month to date at noon of the 18th: 1 Sun ($4) + 12 weekdays ($192) + 4 weekend days ($16)
    # + half of the 18th ($8) = $220. The whole month: 21 weekdays × 16 + 9 weekend days × 4 = $372.
    amounts = {d: steady(d) for d in NOV if d < TODAY}
    f = forecast(D(220), amounts, TODAY, D("0.5"), LAST)
    assert f.history_days == 14                      # 4-17 November
    assert (f.weekday.mean, f.weekday.days, f.weekend.mean, f.weekend.days) == (D(16), 10, D(4), 4)
    assert f.projected == D(220) + D("8.5") * 16 + 4 * 4 == D(372)
    assert f.low == f.high == D(372)                 # no spread, no range


def test_range_from_the_lowest_and_highest_day_of_each_kind():
    amounts = {d: steady(d) for d in NOV if d < TODAY}
    amounts[date(2026, 11, 10)] = D(24)              # one busy Tuesday
    amounts[date(2026, 11, 14)] = D(2)               # a quiet Saturday
    amounts[date(2026, 11, 15)] = D(6)               # a busy Sunday
    f = forecast(D(220), amounts, TODAY, D("0.5"), LAST)
    assert f.weekday.mean == D("16.8")               # (9 × 16 + 24) / 10
    assert (f.weekday.low, f.weekday.high) == (D(16), D(24))
    assert (f.weekend.mean, f.weekend.low, f.weekend.high) == (D(4), D(2), D(6))   # (4 + 4 + 2 + 6) / 4
    assert f.projected == D(220) + D("8.5") * D("16.8") + 4 * 4 == D("378.8")
    assert f.low == D(220) + D("8.5") * 16 + 4 * 2 == D(364)
    assert f.high == D(220) + D("8.5") * 24 + 4 * 6 == D(448)


def test_history_starts_at_the_first_day_with_usage_and_counts_quiet_days_as_zero():
    amounts = {date(2026, 11, 16): D(10), date(2026, 11, 12): D(20)}    # nothing on 13-15
    days = history(amounts, TODAY)
    assert [d for d, _ in days] == [date(2026, 11, 12) + timedelta(days=i) for i in range(6)]
    weekday, weekend = run_rates(days)
    assert weekday.mean == D(30) / 4 and weekday.days == 4               # 12, 13, 16, 17: 20 + 0 + 10 + 0
    assert (weekend.mean, weekend.days) == (D(0), 2)                     # 14, 15


def test_a_kind_missing_from_the_history_borrows_all_days():
    # began on Monday the 16th, seen on Wednesday: no weekend day yet
    f = forecast(D(40), {date(2026, 11, 16): D(12), date(2026, 11, 17): D(20)}, TODAY, D(1), LAST)
    assert (f.weekday.mean, f.weekend.mean, f.weekend.days) == (D(16), D(16), 0)
    assert (f.weekend.low, f.weekend.high) == (D(12), D(20))
    assert f.projected == D(40) + 9 * 16 + 4 * 16 == D(248)


def test_no_history_no_forecast():
    assert forecast(D(0), {}, TODAY, D("0.5"), LAST) is None
    assert forecast(D(5), {TODAY: D(5)}, TODAY, D("0.5"), LAST) is None   # only today, not complete
    assert forecast(D(5), {date(2026, 11, 3): D(5)}, TODAY, D("0.5"), LAST) is None   # 15 days ago


def test_an_ended_month_projects_its_month_to_date():
    f = forecast(D(372), {d: steady(d) for d in NOV}, date(2026, 12, 1), D(1), LAST)
    assert f.projected == f.low == f.high == D(372)


def test_crossing_day_at_the_mean_rates():
    amounts = {d: steady(d) for d in NOV if d < TODAY}
    f = forecast(D(220), amounts, TODAY, D("0.5"), LAST)
    # 220 + 8 (rest of the 18th) = 228, + 16 (19th) = 244, + 16 (20th) = 260, + 4 + 4 = 268, + 16 (23rd) = 284
    assert crossing_day(f, D(228), TODAY, D("0.5"), LAST) == TODAY
    assert crossing_day(f, D("228.01"), TODAY, D("0.5"), LAST) == date(2026, 11, 19)
    assert crossing_day(f, D(261), TODAY, D("0.5"), LAST) == date(2026, 11, 21)
    assert crossing_day(f, D(270), TODAY, D("0.5"), LAST) == date(2026, 11, 23)
    assert crossing_day(f, D(372), TODAY, D("0.5"), LAST) == LAST
    assert crossing_day(f, D("372.01"), TODAY, D("0.5"), LAST) is None
    assert crossing_day(f, D(200), TODAY, D("0.5"), LAST) == TODAY        # already reached
