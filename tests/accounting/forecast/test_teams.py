"""Each team's month-end forecast on a simulated history whose answer is known (docs/forecast.md).

November 2026 starts on a Sunday. Team research holds one H100 ($2.00 per GPU-hour) for 8 hours
(08:00-16:00 UTC) on every weekday and 2 hours (10:00-12:00) on every weekend day; the forecast
is made at noon on Wednesday the 18th, when 4 hours of the day are in.
"""
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal as D

import pytest

from apps.accounting.forecast.teams import GPU_HOURS, NotRunning, month_forecast
from apps.reports.forecast_rows import forecast_payload
from apps.accounting.pricing.rates import price_cells_detail
from apps.accounting.usage.cells import UsageFilter, usage_cells

from tests.support.factories import H100, make_cluster, make_device, make_namespace, make_rate, make_usage, utc

NOON_18 = utc(2026, 11, 18, 12)


def steady_history(device, namespace, first: date, until: datetime):
    day = first
    while True:
        weekend = day.weekday() >= 5
        start = datetime.combine(day, datetime.min.time(), tzinfo=timezone.utc) + timedelta(hours=10 if weekend else 8)
        hours = 2 if weekend else 8
        if start >= until:
            return
        make_usage(device, namespace, start, min(hours, int((until - start).total_seconds() // 3600)))
        day += timedelta(days=1)


@pytest.fixture
def november(db):
    cluster = make_cluster()
    make_rate(H100, "2.00", effective_from=date(2026, 1, 1))
    make_namespace(cluster, "llm", "research")
    steady_history(make_device(cluster, "node-1"), "llm", date(2026, 10, 20), NOON_18)
    return cluster


def test_steady_weekdays_and_weekends_project_the_exact_month_end(november):
    month = month_forecast("2026-11", now=NOON_18)
    [row] = forecast_payload(month)["results"]
    # month to date: 1 Nov (2 h) + 13 weekdays × 8 h ... = 110 GPU-hours × $2.00
    assert row["month_to_date"] == "220.00"
    # the whole month: 21 weekdays × 8 h + 9 weekend days × 2 h = 186 GPU-hours = $372.00
    assert (row["projected"], row["low"], row["high"]) == ("372.00", "372.00", "372.00")
    assert (row["weekday_daily"], row["weekend_daily"], row["history_days"]) == ("16.00", "4.00", 14)
    assert row["team"] == "research" and row["currency"] == "USD" and row["note"] is None
    payload = forecast_payload(month)
    assert (payload["weekdays_left"], payload["weekend_days_left"]) == (8.5, 4.0)


def test_month_to_date_is_the_priced_usage_the_statement_shows(november):
    cells = usage_cells(UsageFilter(start=utc(2026, 11, 1), end=NOON_18, teams=frozenset({"research"})))
    cost, currency, _ = price_cells_detail(cells)
    assert month_forecast("2026-11", now=NOON_18).teams[0].forecast.month_to_date == cost == D("220")


def test_a_busy_day_widens_the_range(november):
    device = november.devices.get()
    make_usage(device, "llm", utc(2026, 11, 10, 16), 4)      # Tuesday the 10th: 12 hours, $24
    make_usage(device, "llm", utc(2026, 11, 15, 12), 2)      # Sunday the 15th: 4 hours, $8
    [row] = forecast_payload(month_forecast("2026-11", now=NOON_18))["results"]
    # month to date 220 + 8 + 4 = 232; weekday mean (9 × 16 + 24) / 10 = 16.8; weekend (4 + 4 + 4 + 8) / 4 = 5
    assert row["month_to_date"] == "232.00"
    assert row["projected"] == "394.80"      # 232 + 8.5 × 16.8 + 4 × 5
    assert row["low"] == "384.00"            # 232 + 8.5 × 16 + 4 × 4
    assert row["high"] == "468.00"           # 232 + 8.5 × 24 + 4 × 8


def test_gpu_hours_for_a_gpu_hour_budget(november):
    [team] = month_forecast("2026-11", now=NOON_18, unit=GPU_HOURS).teams
    assert team.currency is None
    assert (team.forecast.month_to_date, team.forecast.projected) == (D(110), D(186))


def test_a_team_with_no_history_has_no_forecast_and_a_team_lead_sees_their_teams(november):
    cluster = november
    make_namespace(cluster, "scratch", "newcomers")
    make_usage(make_device(cluster, "node-2"), "scratch", utc(2026, 11, 18, 9), 2)   # began this morning
    rows = {r["team"]: r for r in forecast_payload(month_forecast("2026-11", now=NOON_18))["results"]}
    assert set(rows) == {"research", "newcomers"}
    assert rows["newcomers"]["projected"] is None and rows["newcomers"]["history_days"] == 0
    assert rows["newcomers"]["note"] == "no usage in the last 14 complete days: too new to project"
    only = month_forecast("2026-11", now=NOON_18, teams={"newcomers"})
    assert [t.team for t in only.teams] == ["newcomers"]
    assert month_forecast("2026-11", now=NOON_18, teams=set()).teams == []


def test_unpriced_usage_is_not_projected(db):
    cluster = make_cluster()
    make_namespace(cluster, "llm", "research")
    steady_history(make_device(cluster, "node-1", model="Some GPU"), "llm", date(2026, 11, 1), NOON_18)
    [row] = forecast_payload(month_forecast("2026-11", now=NOON_18))["results"]
    assert row["projected"] is None and row["unpriced_gpu_hours"] == 110.0
    assert row["note"] == "no priced usage: nothing to project"


def test_ended_and_future_months_have_no_forecast(november):
    with pytest.raises(NotRunning, match="period='2026-10' has ended"):
        month_forecast("2026-10", now=NOON_18)
    with pytest.raises(NotRunning, match="period='2026-12' has not started yet"):
        month_forecast("2026-12", now=NOON_18)


def test_a_month_across_a_dst_change(db, settings):
    """New York, March 2026: clocks go forward on Sunday the 8th, a 23-hour billing day. One H100
    at $1.00 held every hour from 1 March, forecast at midnight starting Monday the 16th."""
    settings.BILLING_TIMEZONE = "America/New_York"
    cluster = make_cluster()
    make_rate(H100, "1.00", effective_from=date(2026, 1, 1))
    make_namespace(cluster, "llm", "research")
    first, as_of = utc(2026, 3, 1, 5), utc(2026, 3, 16, 4)        # local midnights (EST, then EDT)
    make_usage(make_device(cluster), "llm", first, int((as_of - first).total_seconds() // 3600))
    month = month_forecast("2026-03", now=as_of)
    f = month.teams[0].forecast
    assert month.today == date(2026, 3, 16) and month.today_left == 1
    assert f.month_to_date == D(359)                                # 15 days × 24 h − 1
    # history 2-15 March: ten weekdays of $24; weekend 7 (24), 8 (23), 14, 15 (24) -> mean 23.75
    assert (f.weekday.mean, f.weekend.mean, f.weekend.low, f.weekend.high) == (D(24), D("23.75"), D(23), D(24))
    # left: 12 weekdays (16-20, 23-27, 30, 31) and 4 weekend days (21, 22, 28, 29)
    assert (f.days_left.weekdays, f.days_left.weekend_days) == (D(12), D(4))
    assert f.projected == 359 + 12 * 24 + 4 * D("23.75") == D(742)
    assert (f.low, f.high) == (D(739), D(743))                     # 743 = March's 31 × 24 − 1 hours


def test_the_rest_of_a_23_hour_day(db, settings):
    settings.BILLING_TIMEZONE = "America/New_York"
    # 8 March runs 05:00 UTC (00:00 EST) to 04:00 UTC on the 9th (00:00 EDT): at 16:30 UTC,
    # 11.5 of its 23 hours have passed and half of the day is left.
    from apps.accounting.forecast.teams import today_and_rest
    assert today_and_rest(utc(2026, 3, 8, 16, 30)) == (date(2026, 3, 8), D("0.5"))
    assert today_and_rest(utc(2026, 3, 9, 4)) == (date(2026, 3, 9), D(1))


# ---------------------------------------------------------------- budget forecast alerts

def budget_of(team_name, amount, unit="money"):
    from apps.recommendations.models import TeamBudget
    from apps.teams.models import Team
    return TeamBudget.objects.create(team=Team.objects.get(name=team_name), unit=unit, monthly_amount=D(amount),
                                     currency="USD" if unit == "money" else "", email_to="lead@example.com")


def test_a_forecast_past_the_budget_raises_one_alert_with_the_day(november):
    from apps.recommendations.forecast_alerts import check_budget_forecasts
    from apps.recommendations.models import Alert
    budget_of("research", "300")
    [raised] = check_budget_forecasts(NOON_18)
    # 220 so far; + 8 (rest of the 18th) + 16 + 16 + 4 + 4 + 16 = 284 on the 23rd, + 16 = 300 on the 24th
    assert raised.created and raised.alert.key == "forecast:research:2026-11"
    assert raised.alert.kind == Alert.Kind.FORECAST
    assert raised.alert.text == ("GPU budget forecast: team research will exceed its 2026-11 budget of $300.00 "
                                 "by about 2026-11-24 (projected month-end $372.00, range $372.00 – $372.00; "
                                 "$220.00 so far).")
    assert raised.alert.fields["exceeds_on"] == "2026-11-24" and len(raised.delivery_ids) == 1
    assert [r.created for r in check_budget_forecasts(NOON_18)] == [False]      # once a month


def test_no_forecast_alert_under_the_budget_or_once_it_is_spent(november):
    from apps.recommendations.forecast_alerts import check_budget_forecasts
    budget = budget_of("research", "372.01")                # the forecast stays under it
    assert check_budget_forecasts(NOON_18) == []
    budget.monthly_amount = D("220")                        # spent already: the 100 % alert's news
    budget.save()
    assert check_budget_forecasts(NOON_18) == []


def test_a_gpu_hour_budget_is_forecast_in_gpu_hours(november):
    from apps.recommendations.forecast_alerts import check_budget_forecasts
    budget_of("research", "150", unit="gpu_hours")
    [raised] = check_budget_forecasts(NOON_18)
    # 110 so far; +4 (rest of the 18th) +8 +8 +2 +2 +8 = 142 on the 23rd, +8 = 150 on the 24th
    assert raised.alert.fields["exceeds_on"] == "2026-11-24"
    assert "budget of 150.00 GPU-hours" in raised.alert.text and "projected month-end 186.00 GPU-hours" in raised.alert.text


def test_a_money_forecast_alert_is_not_shown_to_a_viewer(november, client):
    from apps.recommendations.forecast_alerts import check_budget_forecasts
    from tests.support.factories import make_user
    budget_of("research", "300")
    check_budget_forecasts(NOON_18)
    client.force_login(make_user("finance", "finance"))
    assert "will exceed its 2026-11 budget" in client.get("/advice/alerts/").content.decode()
    client.force_login(make_user("viewer", "viewer"))
    assert "will exceed" not in client.get("/advice/alerts/").content.decode()


def test_days_priced_in_another_currency_are_projected_in_it(november):
    """From 30 November (a Monday) the H100 costs 3.00 EUR: the month's 8 hours of that day are
    projected in EUR (8 × 3.00 = 24.00), the rest in USD (372.00 − 16.00 = 356.00); no currency
    is dropped, none is added to another."""
    make_rate(H100, "3.00", currency="EUR", effective_from=date(2026, 11, 30))
    rows = {r["currency"]: r for r in forecast_payload(month_forecast("2026-11", now=NOON_18))["results"]}
    assert (rows["USD"]["month_to_date"], rows["USD"]["projected"]) == ("220.00", "356.00")
    assert (rows["EUR"]["month_to_date"], rows["EUR"]["projected"]) == ("0.00", "24.00")


def test_money_booked_without_recent_usage_is_still_the_month_to_date(db):
    """vision ran 5 h on 2 November at 2.00 (10.00) and nothing since: on the 28th nothing is left
    to project from the last 14 days, but its month to date is the 10.00 on its statement."""
    cluster = make_cluster()
    make_rate(H100, "2.00", effective_from=date(2026, 1, 1))
    make_namespace(cluster, "cv", "vision")
    make_usage(make_device(cluster), "cv", utc(2026, 11, 2, 8), hours=5)
    [row] = forecast_payload(month_forecast("2026-11", now=utc(2026, 11, 28, 12)))["results"]
    assert (row["team"], row["month_to_date"], row["projected"]) == ("vision", "10.00", None)
