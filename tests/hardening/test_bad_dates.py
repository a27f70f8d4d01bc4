"""Dates and periods out of range or not dates at all: a 400 naming the parameter on every API
endpoint and page that takes start / end / period, a one-line CommandError on the commands;
never a 500 from an OverflowError or ValueError deep inside (docs/dates-and-money.md).
The portal accepts the years 2000-2100 and says so."""
import html
import io
from urllib.parse import urlencode

import openpyxl
import pytest
from django.core.management import CommandError, call_command

WINDOWED = ["/api/v1/usage/?group_by=team&", "/api/v1/usage/?group_by=team&format=csv&", "/api/v1/idle/?",
            "/api/v1/idle/?format=csv&", "/?", "/explore/?", "/explore/?format=csv&", "/idle/?", "/idle/?format=csv&", "/health/?",
            "/teams/acme/?", "/admin-tools/ingest/?"]
OUT_OF_RANGE = ["9999-12-31T23:00:00", "9999-12-31", "0001-01-01", "0001-01-01T00:00:00+14:00", "1899-12-31",
                "1999-12-31T23:59:59", "2101-01-01", "10000-01-01"]
NOT_A_DATE = ["99999999999", "-99999999999", "nan", "NaN", "inf", "-inf", "1e308", "2026-02-30", "0000-00-00",
              "2026-10-25T24:00:01", "2026-10-25T10:00:00+99:00", "x" * 5000]
PERIODED = ["/api/v1/chargeback/?", "/api/v1/chargeback/?format=csv&", "/api/v1/chargeback/?format=xlsx&",
            "/api/v1/chargeback/xlsx/?", "/api/v1/chargeback/focus/?", "/api/v1/forecast/?", "/chargeback/?", "/chargeback/close/?"]
OUT_OF_RANGE_PERIODS = ["9999-12", "1899-01", "1999-12", "2101-01", "0000-01"]
NOT_A_PERIOD = ["99999999999", "nan", "2026-00", "2026-13", "2026-1", "２０２６-０３", "2026-03\n", "-2026-03", "x" * 5000]


def text_of(response) -> str:
    if response.content[:2] == b"PK":  # an XLSX error body: one sheet of key / value
        sheet = openpyxl.load_workbook(io.BytesIO(response.content)).active
        return " ".join(str(c.value) for row in sheet.iter_rows() for c in row)
    return html.unescape(response.content.decode())


def shown(value: str) -> str:
    return value if len(value) <= 64 else value[:64] + "…"


def get(client, base, **params):
    """`base` ends in ? or &: the parameters are appended to the query it already has."""
    return client.get(base + urlencode(params))


@pytest.mark.parametrize("base", WINDOWED)
@pytest.mark.parametrize("name", ["start", "end"])
def test_out_of_range_dates_are_a_400_naming_the_parameter_and_the_years(as_role, base, name):
    c = as_role("admin")
    for value in OUT_OF_RANGE:
        response = get(c, base, **{name: value})
        body = text_of(response)
        assert response.status_code == 400, f"{base}{name}={value}: {response.status_code}"
        if value.startswith("10000"):   # five-digit years are not ISO 8601 at all
            assert f"{name}={value!r} is not an ISO 8601 date or instant" in body, body[:400]
        else:
            assert f"{name}={value!r} is out of range: the portal accepts years 2000-2100 only" in body, body[:400]


@pytest.mark.parametrize("base", WINDOWED)
@pytest.mark.parametrize("name", ["start", "end"])
def test_garbage_dates_are_a_400_naming_the_parameter(as_role, base, name):
    c = as_role("admin")
    for value in NOT_A_DATE:
        response = get(c, base, **{name: value})
        assert response.status_code == 400, f"{base}{name}={value[:40]}: {response.status_code}"
        assert f"{name}={shown(value)!r} is not an ISO 8601 date or instant" in text_of(response), base


@pytest.mark.parametrize("base", PERIODED)
def test_bad_periods_are_a_400_naming_the_parameter(as_role, base):
    c = as_role("admin")
    for value in OUT_OF_RANGE_PERIODS + NOT_A_PERIOD:
        response = get(c, base, period=value)
        body = text_of(response)
        assert response.status_code == 400, f"{base}period={value!r}: {response.status_code}"
        assert "period=" + repr(value)[:8] in body, f"{base}period={value!r}: {body[:300]}"
        if value in OUT_OF_RANGE_PERIODS:
            assert "is out of range: the portal accepts years 2000-2100 only" in body, body[:300]
        else:
            assert "is not a month like 2026-03 (YYYY-MM)" in body, body[:300]


@pytest.mark.parametrize("value", ["9999-12", "1899-01", "2101-01", "99999999999"])
def test_bad_periods_on_close_and_reopen_are_a_400_naming_the_parameter(as_role, value):
    c = as_role("admin")
    for url in ("/api/v1/chargeback/close/", "/api/v1/chargeback/reopen/"):
        response = c.post(url, {"period": value}, content_type="application/json")
        assert response.status_code == 400 and f"period={value!r}" in str(response.json()["period"]), url
    response = c.post("/chargeback/close/", {"period": value})
    assert response.status_code == 400 and f"period={value!r}" in text_of(response)


@pytest.mark.parametrize("command, args, options, message", [
    ("close_period", ["9999-12"], {}, "period='9999-12' is out of range: the portal accepts years 2000-2100 only"),
    ("close_period", ["1899-01"], {}, "period='1899-01' is out of range"),
    ("rebuild_rollups", [], {"start": "0001-01-01"}, "--start='0001-01-01' is out of range"),
    ("rebuild_rollups", [], {"end": "9999-12-31T23:00:00"}, "--end='9999-12-31T23:00:00' is out of range"),
    ("rebuild_rollups", [], {"start": "99999999999"}, "--start='99999999999' is not an ISO 8601 date"),
    ("ingest", [], {"cluster": "gpu-east", "start": "0001-01-01", "end": "2026-01-01"}, "--start='0001-01-01' is out"),
    ("ingest", [], {"cluster": "gpu-east", "start": "2026-01-01", "end": "nan"}, "--end='nan' is not an ISO 8601"),
    ("backfill", [], {"cluster": "gpu-east", "start": "2026-01-01", "end": "9999-12-31"}, "--end='9999-12-31' is out"),
])
def test_commands_refuse_bad_dates_in_one_line(world, db, command, args, options, message):
    with pytest.raises(CommandError) as refused:
        call_command(command, *args, **options)
    assert message in str(refused.value) and "\n" not in str(refused.value)
