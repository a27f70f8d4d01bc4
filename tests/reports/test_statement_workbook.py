"""The statement workbook (docs/chargeback.md, "The statement workbook"): a sheet per view, a
cover, totals per currency, and the same figures as the JSON and the CSV to the minor unit.
Figures hand-computed in tests/reports/workbook.py."""
import csv
import io
from collections import defaultdict
from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from apps.accounting.actions.periods import do_close_period
from apps.accounting.models import BillingPeriod, Rate

from tests.support.factories import A100, H100
from .workbook import build_march, cover, cover_table, read_book, table
from tests.support.bodies import body_of

pytestmark = pytest.mark.django_db
URL = "/api/v1/chargeback/"
MIG = "1g.10gb"


@pytest.fixture
def march(team_lead, finance):
    return build_march(team_lead, finance)


def costs(rows, *key_columns):
    """{(key..., currency): Decimal cost} of sheet rows (Decimal of the float read back, to the cent)."""
    out = {}
    for r in rows:
        if r["Cost"] is not None:
            out[(*(r[k] for k in key_columns), r["Currency"])] = Decimal(str(r["Cost"]))
    return out


def csv_lines(client, **params):
    text = body_of(client.get(URL, {"period": "2026-03", "format": "csv", **params})).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_finance_workbook_has_every_view_with_hand_computed_figures(march, finance, api):
    response = api(finance).get(URL + "xlsx/", {"period": "2026-03"})
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="chargeback-2026-03-statement.xlsx"'
    book = read_book(response.content)
    assert book.sheetnames == ["Summary", "By team", "By namespace", "By GPU model", "Adjustments", "Lines"]

    rows, totals = table(book["By team"])
    assert [(r["Team"], r["Cost centre"], r["Allocated GPU-h"], r["Used GPU-h"], r["Efficiency"], r["Currency"],
             r["Cost"]) for r in rows] == [
        ("A", "CC-100", 15.714286, 7.857143, 0.5, "JPY", 450),        # 12 + 3 + 5/7 GPU-h, half used
        ("A", "CC-100", None, None, None, "USD", 30.45),             # 23.45 + 5.00 + 2.00; hours counted once
        ("B", None, 4, 2, 0.5, "USD", 5.94),                         # 3.60 + 2.34 (adjustment), hours: March only
        ("unallocated capacity", None, 1, 0, 0, "USD", 2.35),
    ]
    assert totals == {"JPY": 450, "USD": 38.74}

    rows, totals = table(book["By namespace"])
    assert costs(rows, "Team", "Cluster", "Namespace") == {
        ("A", "prod", "ml", "USD"): Decimal("28.45"), ("A", "prod", "nb", "JPY"): Decimal("450"),
        ("A", "prod", "nb", "USD"): Decimal("2.00"), ("B", "prod", "cv", "USD"): Decimal("5.94"),
        ("unallocated capacity", "prod", None, "USD"): Decimal("2.35")}
    nb = next(r for r in rows if r["Namespace"] == "nb" and r["Currency"] == "JPY")
    assert (nb["Allocated GPU-h"], nb["Used GPU-h"]) == (3.714286, 1.857143)
    assert totals == {"JPY": 450, "USD": 38.74}

    rows, totals = table(book["By GPU model"])
    assert [(r["GPU model"], r["MIG profile"], r["Price class"], r["Allocated GPU-h"], r["Billed hours"],
             r["Billed unit"], r["Hourly rate"], r["Currency"], r["Cost"]) for r in rows] == [
        (A100, None, "on_demand", 3, 3, "GPU-hour", 150, "JPY", 450),
        # ml 10 h + unallocated 1 h this month; billed also the February hour: 23.45 + 2.35 + 2.34
        (H100, None, "on_demand", 11, 12, "GPU-hour", 2.345, "USD", 28.14),
        (H100, None, "on_demand", 2, 2, "GPU-hour", 2.5, "USD", 5),
        (H100, None, "spot", 4, 4, "GPU-hour", 0.9, "USD", 3.6),
        (H100, MIG, "on_demand", 0.714286, 5, "instance-hour", 0.4, "USD", 2),
    ]
    assert totals == {"JPY": 450, "USD": 38.74}

    rows, totals = table(book["Adjustments"])
    assert [(r["Corrects month"], r["Team"], r["Namespace"], r["Billed hours"], r["Hourly rate"], r["Cost"])
            for r in rows] == [("2026-02", "B", "cv", 1, 2.345, 2.34)]
    assert totals == {"USD": 2.34}

    facts = cover(book["Summary"])
    assert book["Summary"]["A1"].value == "Chargeback statement 2026-03"
    assert facts["Period"] == "2026-03" and facts["Billing time zone"] == "UTC"
    assert facts["Month"] == "2026-03-01 00:00 UTC – 2026-04-01 00:00 UTC"
    assert facts["State"].startswith("open")
    assert facts["Teams"] == "all teams, with unallocated capacity"
    last = Rate.history.order_by("-history_id").first()
    assert facts["Rate card"] == f"version {last.history_id}, last changed {last.history_date:%Y-%m-%d %H:%M} UTC"
    assert [(r["Currency"], r["Cost"]) for r in cover_table(book["Summary"], "Totals")] == [("JPY", 450), ("USD", 38.74)]
    assert [(f["Cluster"], f["Ingested until"], f["Behind the month end"][:3])
            for f in cover_table(book["Summary"], "Data freshness")] == [
        ("edge", "2026-03-20 00:00 UTC", "yes"), ("prod", "2026-04-01 00:00 UTC", "no")]
    rates = cover_table(book["Summary"], "Rate card in force")
    assert [(r["GPU model"], r["MIG profile"], r["Price class"], r["Hourly rate"], r["Currency"],
             r["Effective from"].date().isoformat(), r["Billed per"]) for r in rates] == [
        (A100, None, "on_demand", 150, "JPY", "2026-01-01", "GPU-hour"),
        (H100, None, "on_demand", 2.345, "USD", "2026-01-01", "GPU-hour"),
        (H100, None, "on_demand", 2.5, "USD", "2026-03-16", "GPU-hour"),
        (H100, None, "spot", 0.9, "USD", "2026-01-01", "GPU-hour"),
        (H100, MIG, "on_demand", 0.4, "USD", "2026-01-01", "instance-hour"),
    ]


def test_number_formats_frozen_headers_and_widths(march, finance, api):
    book = read_book(api(finance).get(URL + "xlsx/", {"period": "2026-03"}).content)
    ws = book["By team"]
    header = [c.value for c in ws[1]]
    cost, rate_sheet = header.index("Cost") + 1, book["By GPU model"]
    assert [(ws.cell(r, cost).value, ws.cell(r, cost).number_format) for r in (2, 3)] == [(450, "#,##0"), (30.45, "#,##0.00")]
    model_header = [c.value for c in rate_sheet[1]]
    rate = rate_sheet.cell(3, model_header.index("Hourly rate") + 1)
    assert (rate.value, rate.number_format) == (2.345, "#,##0.000")          # a rate keeps its places
    total = ws.cell(ws.max_row, cost)
    assert (ws.cell(ws.max_row, 1).value, total.value, total.number_format, total.font.b) == ("Total", 38.74, "#,##0.00", True)
    for sheet in book.worksheets:
        assert sheet.freeze_panes == "A2", sheet.title
        assert sheet.column_dimensions["A"].width >= 8, sheet.title
        for row in sheet.iter_rows():
            assert all(c.data_type != "f" for c in row), sheet.title


def test_workbook_agrees_with_the_json_and_the_csv(march, finance, api):
    client = api(finance)
    book = read_book(client.get(URL, {"period": "2026-03", "format": "xlsx"}).content)
    body = client.get(URL, {"period": "2026-03", "group_by": "team"}).json()
    lines = csv_lines(client, group_by="team")

    rows, totals = table(book["By team"])
    by_team = {((r["team"] or "unallocated capacity"), c): Decimal(a)
               for r in body["results"] for c, a in r["costs_by_currency"].items()}
    assert costs(rows, "Team") == by_team
    assert {c: Decimal(str(a)) for c, a in totals.items()} == {c: Decimal(a) for c, a in body["totals_by_currency"].items()}

    def summed(*columns):
        out = defaultdict(Decimal)
        for line in lines:
            if line["cost"]:
                out[(*(line[c] or None for c in columns), line["currency"])] += Decimal(line["cost"])
        return dict(out)

    rows, _ = table(book["By namespace"])
    from_csv = {(t or "unallocated capacity", c, n, cur): v for (t, c, n, cur), v in summed("team", "cluster", "namespace").items()}
    assert costs(rows, "Team", "Cluster", "Namespace") == from_csv
    rows, _ = table(book["By GPU model"])
    from_csv = {(m, p, pc, float(rate), cur): v
                for (m, p, pc, rate, cur), v in summed("gpu_model", "mig_profile", "price_class", "hourly_rate").items()}
    assert costs(rows, "GPU model", "MIG profile", "Price class", "Hourly rate") == from_csv

    sheet_lines, line_totals = table(book["Lines"])
    assert [(r["key"], r["kind"], r["namespace"] or "", Decimal(str(r["cost"]))) for r in sheet_lines] == [
        (line["key"], line["kind"], line["namespace"], Decimal(line["cost"])) for line in lines]
    # its Total rows are the statement's, as under every other sheet's table
    assert {c: Decimal(str(a)) for c, a in line_totals.items()} == {
        c: Decimal(a) for c, a in api(finance).get(URL, {"period": "2026-03", "group_by": "team"}).json()[
            "totals_by_currency"].items()}
    assert [(r["Cost"]) for r in table(book["Adjustments"])[0]] == [
        float(line["cost"]) for line in lines if line["kind"] == "adjustment"]


def test_team_lead_gets_their_teams_only(march, team_lead, api):
    client = api(team_lead)
    book = read_book(client.get(URL + "xlsx/", {"period": "2026-03"}).content)
    rows, totals = table(book["By team"])
    assert [(r["Team"], r["Currency"], r["Cost"]) for r in rows] == [("A", "JPY", 450), ("A", "USD", 30.45)]
    assert totals == {"JPY": 450, "USD": 30.45}
    rows, totals = table(book["By namespace"])
    assert {(r["Namespace"], r["Currency"]): r["Cost"] for r in rows} == {
        ("ml", "USD"): 28.45, ("nb", "JPY"): 450, ("nb", "USD"): 2}
    rows, totals = table(book["By GPU model"])
    assert [(r["Price class"], r["MIG profile"], r["Hourly rate"], r["Cost"]) for r in rows] == [
        ("on_demand", None, 150, 450), ("on_demand", None, 2.345, 23.45), ("on_demand", None, 2.5, 5),
        ("on_demand", MIG, 0.4, 2)]
    assert totals == {"JPY": 450, "USD": 30.45}
    assert table(book["Adjustments"]) == ([], {})
    facts = cover(book["Summary"])
    assert facts["Teams"] == "A"
    assert [f["Cluster"] for f in cover_table(book["Summary"], "Data freshness")] == ["prod"]
    assert [(r["Price class"], r["Hourly rate"]) for r in cover_table(book["Summary"], "Rate card in force")] == [
        ("on_demand", 150), ("on_demand", 2.345), ("on_demand", 2.5), ("on_demand", 0.4)]
    values = {c.value for ws in book.worksheets for row in ws.iter_rows() for c in row}
    assert not values & {"B", "cv", "edge", "spot", "unallocated capacity"}
    assert client.get(URL + "xlsx/", {"period": "2026-03", "team": "B"}).status_code == 403


@pytest.fixture
def berlin(settings):
    settings.BILLING_TIMEZONE = "Europe/Berlin"


def test_closed_month_names_who_closed_it_when_and_keeps_its_rates(berlin, march, finance, admin_user, api):
    """The same hand-computed figures in Berlin (every hour lies well inside its day); after the
    close a rate edit changes nothing in the workbook."""
    do_close_period("2026-03", actor=finance)
    Rate.objects.filter(hourly_rate=Decimal("2.345")).update(hourly_rate=Decimal("9.99"))
    # an ingest after the close moves edge's watermark: the closed workbook states it as at the close
    from apps.clusters.models import Cluster
    Cluster.objects.filter(name="edge").update(ingested_until=datetime(2026, 4, 5, tzinfo=ZoneInfo("UTC")))
    bp = BillingPeriod.objects.get(period="2026-03")
    book = read_book(api(finance).get(URL + "xlsx/", {"period": "2026-03"}).content)
    facts = cover(book["Summary"])
    when = bp.closed_at.astimezone(ZoneInfo("Europe/Berlin"))
    assert facts["State"] == f"closed at {when:%Y-%m-%d %H:%M %Z} by finance"
    assert facts["Billing time zone"] == "Europe/Berlin"
    assert facts["Month"] == "2026-03-01 00:00 CET – 2026-04-01 00:00 CEST"
    changed = datetime.fromisoformat(bp.rate_card_changed_at.isoformat()).astimezone(ZoneInfo("Europe/Berlin"))
    assert facts["Rate card"] == f"version {bp.rate_card_version}, last changed {changed:%Y-%m-%d %H:%M %Z}"
    assert table(book["By team"])[1] == {"JPY": 450, "USD": 38.74}
    assert [r["Hourly rate"] for r in cover_table(book["Summary"], "Rate card in force")] == [150, 2.345, 2.5, 0.9, 0.4]
    # prod's watermark (1 April 00:00 UTC = 02:00 CEST) passed Berlin's month end; edge's did not
    assert [(f["Cluster"], f["Ingested until"], f["Behind the month end"][:3])
            for f in cover_table(book["Summary"], "Data freshness")] == [
        ("edge", "2026-03-20 01:00 CET", "yes"), ("prod", "2026-04-01 02:00 CEST", "no")]


def test_bad_input_is_a_4xx_naming_it(march, finance, viewer, api):
    client = api(finance)
    response = client.get(URL + "xlsx/", {"period": "2026-13"})
    assert response.status_code == 400
    assert read_book(response.content).active["A1"].value == "period"
    assert client.get(URL, {"period": "2026-03", "format": "xlsx", "group_by": "pod"}).status_code == 400
    assert api(viewer).get(URL + "xlsx/", {"period": "2026-03"}).status_code == 403


def test_the_page_links_the_statement_workbook(march, finance, client):
    client.force_login(finance)
    page = client.get("/chargeback/", {"period": "2026-03"}).content.decode()
    assert 'href="/api/v1/chargeback/xlsx/?period=2026-03&amp;shared_idle=apart">Download statement (XLSX)</a>' in page


def test_unallocated_cost_spread_over_teams(march, finance, api):
    """The 2.345 unallocated H100 hour goes to the teams in proportion to their H100 cost on prod
    (A 30.45, B 3.60 of 34.05): A 2.09712… and B 0.24793…. Its shown 2.35 (the statement rounded
    once, apart) is split by largest remainder: 2.09 + 0.24 leave two cents, one each: A 2.10,
    B 0.25. A 30.45 + 2.10 = 32.55, B 3.60 + 2.34 + 0.25 = 6.19; the total stays 38.74."""
    client = api(finance)
    book = read_book(client.get(URL + "xlsx/", {"period": "2026-03", "shared_idle": "spread"}).content)
    body = client.get(URL, {"period": "2026-03", "shared_idle": "spread"}).json()
    rows, totals = table(book["By team"])
    assert [(r["Team"], r["Currency"], r["Cost"]) for r in rows] == [("A", "JPY", 450), ("A", "USD", 32.55),
                                                                     ("B", "USD", 6.19)]
    assert totals == {"JPY": 450, "USD": 38.74} and body["totals_by_currency"] == {"JPY": "450", "USD": "38.74"}
    rows, totals = table(book["By namespace"])
    assert costs(rows, "Team", "Namespace") == {
        ("A", "ml", "USD"): Decimal("28.45"), ("A", "nb", "JPY"): Decimal("450"), ("A", "nb", "USD"): Decimal("2.00"),
        ("A", "(shared idle)", "USD"): Decimal("2.10"), ("B", "cv", "USD"): Decimal("5.94"),
        ("B", "(shared idle)", "USD"): Decimal("0.25")}
    assert totals == {"JPY": 450, "USD": 38.74}
    assert table(book["By GPU model"])[1] == {"JPY": 450, "USD": 38.74}
    assert table(book["Adjustments"])[1] == {"USD": 2.34}
    assert cover(book["Summary"])["Unallocated cost"] == "spread over teams"


def test_a_month_without_usage_is_an_empty_workbook(march, finance, api):
    book = read_book(api(finance).get(URL + "xlsx/", {"period": "2026-05"}).content)
    for name in ("By team", "By namespace", "By GPU model", "Adjustments", "Lines"):
        assert table(book[name]) == ([], {}), name
    assert cover_table(book["Summary"], "Totals") == [] and cover_table(book["Summary"], "Rate card in force") == []


def test_a_team_name_with_control_characters_is_a_workbook_not_a_500(march, finance, api):
    """Found by the API fuzz test: ?team= with a control character (U+0002) failed the whole
    workbook with a 500, as XML cannot hold it. The name is shown with U+FFFD in its place.
    (Such a team must exist: an unknown team is a 404 that stores nothing, docs/security.md.)"""
    assert api(finance).get(URL + "xlsx/", {"period": "2026-03", "team": "\x02acme"}).status_code == 404
    from apps.teams.models import Team
    Team.objects.create(name="\x02acme")
    response = api(finance).get(URL + "xlsx/", {"period": "2026-03", "team": "\x02acme"})
    assert response.status_code == 200
    book = read_book(response.content)
    assert table(book["By team"]) == ([], {})           # no such team: no lines
    summary = [c.value for row in book["Summary"].iter_rows() for c in row if isinstance(c.value, str)]
    assert any("\ufffdacme" in v for v in summary) and not any("\x02" in v for v in summary)
