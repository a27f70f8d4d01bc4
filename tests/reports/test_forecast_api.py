"""/api/v1/forecast/ and the pages that show the forecast: the running month, scoped like the statement.

The history is laid before today (the API forecasts the month that is running now): research
holds one H100 ($2.00 per GPU-hour) for 8 hours every day of the last 35 days, so both run rates
are $16 a day; vision does the same at half the hours.
"""
from datetime import datetime, timedelta, timezone
from decimal import Decimal as D

import pytest

from apps.accounting.forecast.teams import month_forecast
from apps.reports.forecast_rows import forecast_payload

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_team, make_usage

pytestmark = pytest.mark.django_db
URL = "/api/v1/forecast/"


@pytest.fixture
def history(team_lead):
    cluster = make_cluster()
    make_rate(hourly_rate="2.00")
    make_team("research", lead=team_lead)
    make_namespace(cluster, "llm", "research")
    make_namespace(cluster, "cv", "vision")
    today = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    gpu_a, gpu_b = make_device(cluster, "node-1"), make_device(cluster, "node-2")
    for back in range(1, 36):      # every day of this month before today, and more
        make_usage(gpu_a, "llm", today - timedelta(days=back, hours=-8), 8)
        make_usage(gpu_b, "cv", today - timedelta(days=back, hours=-8), 4)
    return today


def test_finance_sees_every_team_and_the_numbers_are_the_forecast_at_as_of(history, finance, api):
    body = api(finance).get(URL).json()
    now = datetime.fromisoformat(body["as_of"].replace("Z", "+00:00"))
    assert body["period"] == f"{now:%Y-%m}"
    assert body == forecast_payload(month_forecast(body["period"], now=now))
    rows = {r["team"]: r for r in body["results"]}
    assert set(rows) == {"research", "vision"}
    research = rows["research"]
    days_before_today = history.day - 1                     # complete days of this month so far
    assert research["month_to_date"] == f"{16 * days_before_today}.00"
    assert (research["weekday_daily"], research["weekend_daily"], research["history_days"]) == ("16.00", "16.00", 14)
    left = D(str(body["weekdays_left"])) + D(str(body["weekend_days_left"]))
    # nothing used yet today: the projection is 16 a day over every day left (days_left is rounded to 6 places)
    assert abs(D(research["projected"]) - (16 * days_before_today + 16 * left)) <= D("0.01")
    assert research["low"] == research["high"] == research["projected"]


def test_a_team_lead_sees_their_teams_only(history, team_lead, api):
    body = api(team_lead).get(URL).json()
    assert [r["team"] for r in body["results"]] == ["research"]
    refused = api(team_lead).get(URL, {"team": "vision"})
    assert refused.status_code == 403 and "vision" in refused.json()["detail"]
    assert [r["team"] for r in api(team_lead).get(URL, {"team": "research"}).json()["results"]] == ["research"]


def test_viewer_and_anonymous_are_refused(history, viewer, api):
    assert api(viewer).get(URL).status_code == 403
    assert api().get(URL).status_code in (401, 403)


def test_only_the_running_month_has_a_forecast(history, finance, api):
    ended = api(finance).get(URL, {"period": "2001-01"})
    assert ended.status_code == 400
    assert ended.json()["period"] == ("period='2001-01' has ended: its cost is on its statement; "
                                      "a forecast is made for the running month only")
    future = api(finance).get(URL, {"period": "2099-12"})
    assert future.status_code == 400 and "has not started yet" in future.json()["period"]
    assert "is not a month" in api(finance).get(URL, {"period": "2026-13"}).json()["period"]


def test_forecast_in_the_schema(finance, api):
    schema = api(finance).get("/api/v1/schema/", {"format": "json"}).json()
    op = schema["paths"]["/api/v1/forecast/"]["get"]
    assert {p["name"] for p in op["parameters"]} >= {"period", "team"}


def test_team_page_and_chargeback_page_show_it(history, finance, client):
    client.force_login(finance)
    # the projection moves with the clock (the rest of today); the run rate does not
    daily = "$16.00 a weekday, $16.00 a weekend day"
    team_page = client.get("/teams/research/").content.decode()
    assert 'id="forecast"' in team_page and "Month-end forecast" in team_page and daily in team_page
    chargeback = client.get("/chargeback/", {"period": f"{history:%Y-%m}"}).content.decode()
    assert 'id="forecast-head"' in chargeback and chargeback.count('class="num forecast">≈ $') == 2
    last_month = (history.replace(day=1) - timedelta(days=1)).strftime("%Y-%m")
    assert 'id="forecast-head"' not in client.get("/chargeback/", {"period": last_month}).content.decode()


def test_team_page_shows_no_forecast_to_a_viewer(history, viewer, client):
    client.force_login(viewer)
    assert 'id="forecast"' not in client.get("/teams/research/").content.decode()
