"""Dates typed by users are days of the billing time zone, not of UTC (docs/dates-and-money.md).

Europe/Berlin: CEST (+02:00) until 2026-10-25 03:00 local, when the clocks go back to CET
(+01:00): that day has 25 hours. On 2026-03-29 the clocks go forward at 02:00: 23 hours.
"""
import csv
import html
import io

import pytest
from django.core.management import call_command

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_usage, utc
from tests.support.bodies import body_of

pytestmark = pytest.mark.django_db
USAGE = "/api/v1/usage/"


@pytest.fixture
def berlin(settings):
    settings.BILLING_TIMEZONE = "Europe/Berlin"


def window(client, **params):
    body = client.get(USAGE, {"group_by": "team", **params}).json()
    return body["start"], body["end"]


@pytest.mark.parametrize("start, end, expected", [
    # the 25-hour day: midnight CEST to midnight CET
    ("2026-10-25", "2026-10-26", ("2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z")),
    # the 23-hour day: midnight CET to midnight CEST
    ("2026-03-29", "2026-03-30", ("2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z")),
    # a month: October local is 31 days and one hour
    ("2026-10-01", "2026-11-01", ("2026-09-30T22:00:00Z", "2026-10-31T23:00:00Z")),
    # a date-time without offset is a Berlin wall-clock time
    ("2026-10-15T12:00", "2026-10-15T18:30:00", ("2026-10-15T10:00:00Z", "2026-10-15T16:30:00Z")),
    # an explicit offset or Z is kept as given
    ("2026-10-15T12:00:00Z", "2026-10-15T18:00:00+05:30", ("2026-10-15T12:00:00Z", "2026-10-15T12:30:00Z")),
    # DST gap: 02:30 on 2026-03-29 never happens in Berlin; read with the offset before the gap (+01:00)
    ("2026-03-29T02:30", "2026-03-29T04:00", ("2026-03-29T01:30:00Z", "2026-03-29T02:00:00Z")),
    # DST fold: 02:30 on 2026-10-25 happens twice; the first one (still CEST, +02:00)
    ("2026-10-25T02:30", "2026-10-25T04:00", ("2026-10-25T00:30:00Z", "2026-10-25T03:00:00Z")),
])
def test_the_api_reads_dates_in_the_billing_zone_and_echoes_utc(berlin, finance, api, start, end, expected):
    assert window(api(finance), start=start, end=end) == expected


def test_utc_billing_keeps_utc_midnights(finance, api):
    assert window(api(finance), start="2026-10-25", end="2026-10-26") == ("2026-10-25T00:00:00Z",
                                                                           "2026-10-26T00:00:00Z")


@pytest.fixture
def october(db):
    """Team A's namespace ml on an H100 at 2.00 USD/h:
    - 2 h from 2026-09-30 22:00Z: 00:00-02:00 on October 1st in Berlin, still September in UTC;
    - 3 h from 2026-10-15 10:00Z: October either way;
    - 1 h from 2026-10-31 23:00Z: 00:00 on November 1st in Berlin (CET), still October in UTC.
    Berlin's October: 2 + 3 = 5 GPU-hours, 10.00 USD. UTC's October would be 3 + 1 = 4, 8.00.
    """
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00")
    gpu = make_device(prod)
    make_usage(gpu, "ml", utc(2026, 9, 30, 22), hours=2)
    make_usage(gpu, "ml", utc(2026, 10, 15, 10), hours=3)
    make_usage(gpu, "ml", utc(2026, 10, 31, 23), hours=1)
    return prod


def test_a_month_of_usage_is_the_chargeback_month(berlin, october, finance, api):
    client = api(finance)
    stmt = client.get("/api/v1/chargeback/", {"period": "2026-10", "group_by": "team"}).json()
    usage = client.get(USAGE, {"start": "2026-10-01", "end": "2026-11-01", "group_by": "team"}).json()
    assert (stmt["start"], stmt["end"]) == ("2026-09-30T22:00:00Z", "2026-10-31T23:00:00Z")   # echoed, UTC
    [stmt_row] = stmt["results"]
    [usage_row] = usage["results"]
    assert (stmt_row["allocated_gpu_hours"], stmt_row["cost"], stmt_row["currency"]) == (5.0, "10.00", "USD")
    assert (usage_row["allocated_gpu_hours"], usage_row["cost"], usage_row["currency"]) == (5.0, "10.00", "USD")
    downloaded = client.get(USAGE, {"start": "2026-10-01", "end": "2026-11-01", "group_by": "team",
                                    "format": "csv"}).content.decode()
    [row] = list(csv.DictReader(io.StringIO(downloaded)))
    assert (row["key"], row["allocated_gpu_hours"], row["cost"]) == ("A", "5.0", "10.00")


def test_pages_pick_local_dates_and_show_the_window_in_local_time(berlin, october, finance, client):
    client.force_login(finance)
    body = html.unescape(client.get("/explore/", {"start": "2026-10-25", "end": "2026-10-26"}).content.decode())
    # the window shown: Berlin's last Sunday of October, 25 hours long, is one billing day
    assert "2026-10-25 00:00 CEST – 2026-10-26 00:00 CET (Europe/Berlin, 1 day)" in body
    assert 'name="start" value="2026-10-25"' in body and 'name="end" value="2026-10-26"' in body
    csv_text = body_of(client.get("/explore/", {"start": "2026-10-01", "end": "2026-11-01", "grain": "day",
                                        "format": "csv"})).decode()
    hours = sum(float(r["allocated_gpu_hours"]) for r in csv.DictReader(io.StringIO(csv_text)))
    assert hours == 5.0   # Berlin's October: the two hours of October 1st in, November 1st's out


def test_management_commands_read_dates_in_the_billing_zone(berlin, october, capsys):
    call_command("rebuild_rollups", start="2026-10-01", end="2026-11-01")
    out = capsys.readouterr().out
    # 2026-09-30T22:00Z..2026-10-31T23:00Z: October's 31 Berlin days, not November 1st too
    assert "prod: 31 day(s) 2026-10-01..2026-10-31" in out, out
