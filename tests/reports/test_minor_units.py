"""Money in each currency's own minor unit: whole yen, cents, thousandths of a dinar, in the
statement, the API, the CSV, the XLSX and the pages (docs/dates-and-money.md)."""
import csv
import html
import io
import os
import subprocess
import sys
from decimal import Decimal as D
from pathlib import Path

import pytest
from openpyxl import load_workbook

from apps.accounting.actions.periods import do_close_period
from apps.accounting.core.rounding import present, round_to_total
from apps.accounting.models import UsageHour
from apps.recommendations import estimator as est
from apps.web.csv import rows_to_csv, safe_cell

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_usage, utc
from tests.support.bodies import body_of

pytestmark = pytest.mark.django_db
URL = "/api/v1/chargeback/"
ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- the pure rounding

def test_present_rounds_half_up_to_the_minor_unit():
    assert present(D("301.5"), "JPY") == "302" and present(D("-301.5"), "JPY") == "-302"
    assert present(D("1.2345"), "KWD") == "1.235" and present(D("1.2345"), "USD") == "1.23"
    assert present(D("7"), "EUR") == "7.00" and present(None, "JPY") is None


def test_round_to_total_keeps_the_sum_in_the_currencys_unit():
    # JPY: 0.4 + 0.4 + 0.4 = 1.2 -> 1 yen; each floors to 0, the one missing yen goes to the first
    assert round_to_total([D("0.4"), D("0.4"), D("0.4")], "JPY") == [D(1), D(0), D(0)]
    # KWD: 3 × 1.0004 = 3.0012 -> 3.001; one fils goes to the first
    assert round_to_total([D("1.0004")] * 3, "KWD") == [D("1.001"), D("1.000"), D("1.000")]
    # USD as before: 3 × 1.005 = 3.015 -> 3.02
    assert round_to_total([D("1.005")] * 3, "USD") == [D("1.01"), D("1.01"), D("1.00")]


def test_money_freed_in_the_rates_unit():
    # (4 - 2) × 730 h × 0.3333 = 486.618; a raised quota, (2 - 4) × ..., is the same amount negative
    assert est.money_freed(4, 2, D("0.3333"), "JPY") == D("487")
    assert est.money_freed(4, 2, D("0.3333"), "USD") == D("486.62")
    assert est.money_freed(4, 2, D("0.3333"), "KWD") == D("486.618")
    assert est.money_freed(2, 4, D("0.3333"), "USD") == D("-486.62")


# ---------------------------------------------------------------- a yen rate card end to end

@pytest.fixture
def yen(db):
    """Team A on an H100 at 100.4 JPY/h: ml 3 h = 301.2, nb 2 h = 200.8; total 502.0 -> 502 yen.
    Lines: floors 301 + 200 = 501, the missing yen goes to nb (remainder 0.8): 301 + 201 = 502."""
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_namespace(prod, "nb", "A")
    make_rate(hourly_rate="100.4", currency="JPY")
    make_usage(make_device(prod), "ml", utc(2026, 3, 2), hours=3)
    make_usage(make_device(prod), "nb", utc(2026, 3, 3), hours=2)
    return prod


def test_yen_statement_api_and_usage_are_whole_yen(yen, finance, api):
    client = api(finance)
    body = client.get(URL, {"period": "2026-03", "group_by": "team"}).json()
    [row] = body["results"]
    assert (row["cost"], row["currency"], row["costs_by_currency"]) == ("502", "JPY", {"JPY": "502"})
    assert [(line["namespace"], line["cost"]) for line in row["lines"]] == [("ml", "301"), ("nb", "201")]
    assert body["totals_by_currency"] == {"JPY": "502"}
    usage = client.get("/api/v1/usage/", {"start": "2026-03-01", "end": "2026-04-01", "group_by": "team"}).json()
    assert [(r["key"], r["cost"], r["currency"]) for r in usage["results"]] == [("A", "502", "JPY")]


def test_yen_csv_and_xlsx_are_whole_yen_numbers(yen, finance, api):
    client = api(finance)
    text = body_of(client.get(URL, {"period": "2026-03", "group_by": "namespace", "format": "csv"})).decode()
    assert [(r["namespace"], r["cost"], r["hourly_rate"]) for r in csv.DictReader(io.StringIO(text))] == [
        ("ml", "301", "100.400000"), ("nb", "201", "100.400000")]
    book = load_workbook(io.BytesIO(client.get(URL + "xlsx/", {"period": "2026-03"}).content))
    lines = book["Lines"]
    header = [c.value for c in lines[1]]
    cost, rate = header.index("cost") + 1, header.index("hourly_rate") + 1
    assert [(lines.cell(r, cost).value, lines.cell(r, cost).number_format) for r in (2, 3)] == [(301, "#,##0"), (201, "#,##0")]
    assert (lines.cell(2, rate).value, lines.cell(2, rate).number_format) == (100.4, "#,##0.0")
    by_team = load_workbook(io.BytesIO(client.get(URL, {"period": "2026-03", "format": "xlsx"}).content))["By team"]
    header = [c.value for c in by_team[1]]
    total = by_team.cell(2, header.index("Cost") + 1)
    assert (total.value, total.number_format, by_team.cell(2, header.index("Currency") + 1).value) == (502, "#,##0", "JPY")


def test_yen_on_the_page_in_the_money_locale(yen, finance, client, settings):
    client.force_login(finance)
    page = html.unescape(client.get("/chargeback/", {"period": "2026-03", "team": "A"}).content.decode())
    assert "¥502" in page and "¥301" in page and "¥201" in page and "¥100.4/h" in page
    assert "502.00" not in page
    settings.MONEY_LOCALE = "de_DE"
    page = html.unescape(client.get("/chargeback/", {"period": "2026-03", "team": "A"}).content.decode())
    assert "502\xa0¥" in page and "100,4\xa0¥/h" in page


def test_dinars_have_three_decimals_everywhere(finance, api, client):
    """1 h at 1.2345 KWD/h = 1.2345 -> 1.235 (half-up to the fils)."""
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="1.2345", currency="KWD")
    make_usage(make_device(prod), "ml", utc(2026, 3, 2), hours=1)
    c = api(finance)
    [row] = c.get(URL, {"period": "2026-03"}).json()["results"]
    assert (row["cost"], row["lines"][0]["cost"]) == ("1.235", "1.235")
    [line] = csv.DictReader(io.StringIO(body_of(c.get(URL, {"period": "2026-03", "format": "csv"})).decode()))
    assert line["cost"] == "1.235"
    sheet = load_workbook(io.BytesIO(c.get(URL + "xlsx/", {"period": "2026-03"}).content))["Lines"]
    header = [cell.value for cell in sheet[1]]
    cost = sheet.cell(2, header.index("cost") + 1)
    assert (cost.value, cost.number_format) == (1.235, "#,##0.000")
    client.force_login(finance)
    assert "KWD1.235" in html.unescape(client.get("/chargeback/", {"period": "2026-03"}).content.decode())


# ---------------------------------------------------------------- CSV: numbers stay numbers

def test_a_negative_adjustment_is_a_number_in_the_csv(finance, api):
    """10 h at 2.00 closed in March; re-ingest then finds 5 h fewer: April carries -10.00."""
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00")
    make_usage(make_device(prod), "ml", utc(2026, 3, 10), hours=10)
    do_close_period("2026-03", actor=finance)
    UsageHour.objects.filter(hour_start__gte=utc(2026, 3, 10, 5)).delete()
    text = body_of(api(finance).get(URL, {"period": "2026-04", "format": "csv"})).decode()
    [line] = csv.DictReader(io.StringIO(text))
    assert (line["kind"], line["allocated_gpu_hours"], line["cost"]) == ("adjustment", "-5.0", "-10.00")


def test_formula_text_is_still_neutralised():
    assert safe_cell("-10.00") == "-10.00" and safe_cell(D("-10.00")) == D("-10.00") and safe_cell(-3) == -3
    for text in ('=HYPERLINK("http://evil.example","x")', "+1+1", "-2+3+cmd|' /C calc'!A0", "@SUM(A1)",
                 "\t=1", "\r=1", "-", "-1e5", "--1", "-1.", "+10"):
        assert safe_cell(text) == "'" + text, text
    text = rows_to_csv([{"team": '=HYPERLINK("http://evil.example","x")', "cost": "-10.00"}])
    assert text.splitlines()[1] == '"\'=HYPERLINK(""http://evil.example"",""x"")",-10.00'


# ---------------------------------------------------------------- the locale setting

def test_a_bad_money_locale_stops_start_up():
    env = {**os.environ, "MONEY_LOCALE": "xx_NOWHERE", "DJANGO_SETTINGS_MODULE": "gpuportal.settings"}
    result = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "ImproperlyConfigured: MONEY_LOCALE='xx_NOWHERE' is not a locale" in result.stderr


# ---------------------------------------------------------------- ISO 4217, not CLDR

# ISO 4217's minor units where babel's CLDR data says 0: the 13 codes the two sources disagree on.
ISO_WINS = {"AFN": 2, "ALL": 2, "IQD": 3, "IRR": 2, "KPW": 2, "LAK": 2, "LBP": 2, "MGA": 2, "MMK": 2,
            "RSD": 2, "SOS": 2, "SYP": 2, "YER": 2}


def test_iso_4217_minor_units_win_over_babel():
    from babel.numbers import get_currency_precision

    from apps.accounting.core.currencies import ISO_4217, minor_digits
    differ = {code: minor_digits(code) for code in ISO_4217 if minor_digits(code) != get_currency_precision(code)}
    assert differ == ISO_WINS
    # 1.2345 Iraqi dinars are shown in fils (3 places), 1.235 Serbian dinars in paras (2 places)
    assert present(D("1.2345"), "IQD") == "1.235" and present(D("1.235"), "RSD") == "1.24"
    assert round_to_total([D("0.0005")] * 2, "IQD") == [D("0.001"), D("0.000")]
    # withdrawn codes the ISO table no longer lists keep babel's digits: the guilder and the lev 2
    assert minor_digits("ANG") == 2 and minor_digits("BGN") == 2 and minor_digits("") == 2


def test_pages_write_iso_4217_digits(settings):
    from apps.reports.templatetags.report_format import money
    assert money("1.2345", "IQD") == "IQD1.235" and money("1.235", "RSD") == "RSD1.24"
    assert money("502", "JPY") == "¥502" and money("1234.5", "USD") == "$1,234.50"
    settings.MONEY_LOCALE = "de_DE"
    assert money("27.589", "USD") == "27,59\xa0$" and money("1.2345", "IQD") == "1,235\xa0IQD"
