"""The forecast, honest (docs/forecast.md): each day left is priced at the rate in force that
day, days are counted from the ingest watermark, a team that owns no namespace any more
projects nothing more, and the range never starts below the money already booked.

One H100 is held 24 hours a day by namespace llm of team research from 1 October 2026. The rate
is 2.00 USD per GPU-hour, 4.00 from 1 November (and, in one test, 6.00 from 16 November).
The forecast is made at midnight starting Tuesday 3 November: the 1st and 2nd are in (2 × 24 h
× 4.00 = 192.00); history is 20 October - 2 November: ten weekdays and four weekend days, each
24 GPU-hours; left are 3-30 November: 20 weekdays and 8 weekend days.
"""
from datetime import date

import pytest

from apps.accounting.actions.periods import do_close_period
from apps.accounting.forecast.teams import month_forecast
from apps.reports.forecast_rows import forecast_payload
from apps.accounting.ledger.statements import statement
from apps.reports.statement_rows import statement_payload
from apps.clusters.models import Cluster
from apps.teams.models import NamespaceAssignment

from tests.support.factories import H100, make_cluster, make_device, make_namespace, make_rate, make_team, make_usage, utc

pytestmark = pytest.mark.django_db
NOV_3 = utc(2026, 11, 3)


@pytest.fixture
def steady(db):
    prod = make_cluster()
    make_namespace(prod, "llm", "research")
    make_rate(H100, "2.00", effective_from=date(2026, 1, 1))
    make_rate(H100, "4.00", effective_from=date(2026, 11, 1))
    make_usage(make_device(prod), "llm", utc(2026, 10, 1), hours=33 * 24)    # 1 October - 2 November
    return prod


def row(now=NOV_3, **kw):
    [r] = forecast_payload(month_forecast("2026-11", now=now, **kw))["results"]
    return r


def test_a_price_rise_on_the_first_is_priced_in(steady):
    # every day left at 4.00: 192 + 28 × 24 × 4.00 = 2,880.00, the real month (the old model,
    # at the last 14 days' costs, said 1,728.00: mostly October days at 2.00)
    r = row()
    assert (r["month_to_date"], r["projected"], r["low"], r["high"]) == ("192.00", "2880.00", "2880.00", "2880.00")
    assert (r["weekday_daily"], r["weekend_daily"]) == ("96.00", "96.00")    # at today's rate


def test_a_future_dated_rate_is_priced_from_its_day(steady):
    make_rate(H100, "6.00", effective_from=date(2026, 11, 16))
    # 192 + 13 days (3-15) × 96 + 15 days (16-30) × 144 = 192 + 1,248 + 2,160 = 3,600.00
    assert row()["projected"] == "3600.00"


def test_days_are_counted_from_the_ingest_watermark(steady):
    Cluster.objects.filter(name="prod").update(ingested_until=NOV_3)
    # Thursday noon, nothing arrived since Tuesday midnight: the forecast stands where the data stops
    month = month_forecast("2026-11", now=utc(2026, 11, 5, 12))
    payload = forecast_payload(month)
    assert payload["as_of"] == "2026-11-03T00:00:00Z"
    assert (payload["weekdays_left"], payload["weekend_days_left"]) == (20.0, 8.0)
    assert payload["results"][0]["projected"] == "2880.00"


def test_a_team_that_owns_no_namespace_any_more_projects_nothing_more(steady):
    from apps.teams.models import Namespace
    llm = Namespace.objects.get(cluster=steady, name="llm")
    NamespaceAssignment.objects.create(namespace=llm, team=make_team("vision"), effective_from=date(2026, 11, 3))
    r = row(teams={"research"})
    # llm is vision's from the 3rd: research keeps what it spent, and spends no more
    assert (r["month_to_date"], r["projected"], r["low"], r["high"]) == ("192.00", "192.00", "192.00", "192.00")


def test_the_range_never_starts_below_the_money_booked(steady, finance):
    do_close_period("2026-10", actor=finance)
    make_usage(make_device(steady, host="node-2"), "llm", utc(2026, 10, 5), hours=10)   # late: 10 h × 2.00
    stmt = statement_payload(statement("2026-11"), "team", None)
    [research] = [r for r in stmt["results"] if r["key"] == "research"]
    assert research["cost"] == "212.00"          # 192.00 of November + 20.00 adjustment for October
    r = row()
    # booked 212.00 + 28 days × 96.00 = 2,900.00; the range starts at what is booked, not below it
    assert (r["month_to_date"], r["projected"], r["low"], r["high"]) == ("212.00", "2900.00", "2900.00", "2900.00")
