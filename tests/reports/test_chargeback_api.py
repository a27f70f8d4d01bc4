"""/api/v1/chargeback/, /api/v1/rates/ and /api/v1/usage/ cost: roles, CSV, XLSX, reconciliation."""
import csv
import io
from datetime import date
from decimal import Decimal

import pytest
from openpyxl import load_workbook

from apps.accounting.models import Rate
from apps.teams.models import AuditEvent

from tests.support.factories import A100, H100, make_cluster, make_device, make_namespace, make_rate, make_team, make_usage, utc
from tests.support.bodies import body_of

pytestmark = pytest.mark.django_db
URL = "/api/v1/chargeback/"


@pytest.fixture
def fleet(team_lead):
    """Team A: ml (10 h H100 at 2.345) and nb (1234 s H100 + 3 h A100 at 1.111); team B: cv (3 h H100)."""
    prod = make_cluster()
    make_team("A", lead=team_lead)
    make_namespace(prod, "ml", "A")
    make_namespace(prod, "nb", "A")
    make_namespace(prod, "cv", "B")
    make_rate(hourly_rate="2.345")
    make_rate(model=A100, hourly_rate="1.111")
    make_usage(make_device(prod), "ml", utc(2026, 3, 1), hours=10)
    make_usage(make_device(prod), "nb", utc(2026, 3, 2), instance_seconds_per_hour=1234.0)
    make_usage(make_device(prod, model=A100), "nb", utc(2026, 3, 3), hours=3)
    make_usage(make_device(prod), "cv", utc(2026, 3, 31, 21), hours=3)
    make_usage(make_device(prod), "", utc(2026, 3, 5), hours=1)
    return prod


def test_statement_reconciles_with_usage_api_to_the_cent(fleet, finance, api):
    client = api(finance)
    stmt = client.get(URL, {"period": "2026-03", "group_by": "team"}).json()
    usage = client.get("/api/v1/usage/", {"start": "2026-03-01", "end": "2026-04-01", "group_by": "team"}).json()
    usage_cost = {r["key"]: (r["cost"], r["currency"]) for r in usage["results"]}
    stmt_cost = {r["key"]: (r["cost"], r["currency"]) for r in stmt["results"] if r["key"] != "unallocated"}
    # A: 10 × 2.345 + 1234/3600 × 2.345 + 3 × 1.111 = 23.45 + 0.80380… + 3.333 = 27.5868… → 27.59
    # B: 3 × 2.345 = 7.035; unallocated: 1 × 2.345. Rounded once (docs/chargeback.md, "Rounding"):
    # 36.9668… → 36.97; floors 27.58 + 7.03 + 2.34 = 36.95, the two missing cents to A (0.0068…)
    # and to the first of the equal remainders 0.005, unallocated: B shows 7.03, on both.
    assert stmt_cost == usage_cost == {"A": ("27.59", "USD"), "B": ("7.03", "USD")}
    for row in stmt["results"]:
        assert sum(Decimal(line["cost"]) for line in row["lines"]) == Decimal(row["cost"])
    assert stmt["closed"] is False and stmt["period"] == "2026-03" and stmt["group_by"] == "team"


def test_group_by_namespace(fleet, finance, api):
    body = api(finance).get(URL, {"period": "2026-03", "group_by": "namespace"}).json()
    by_key = {r["key"]: r for r in body["results"]}
    assert set(by_key) == {"prod/ml", "prod/nb", "prod/cv", "unallocated"}
    assert by_key["prod/nb"]["team"] == "A" and by_key["prod/nb"]["cost"] == "4.14"   # 0.8038 + 3.333
    assert by_key["unallocated"]["cost"] == "2.35"


def test_team_lead_sees_only_their_team(fleet, team_lead, api):
    body = api(team_lead).get(URL, {"period": "2026-03"}).json()
    assert [r["key"] for r in body["results"]] == ["A"]
    assert {line["team"] for line in body["results"][0]["lines"]} == {"A"}
    usage = api(team_lead).get("/api/v1/usage/", {"start": "2026-03-01", "end": "2026-04-01",
                                                    "group_by": "team"}).json()
    assert [(r["key"], r["cost"]) for r in usage["results"]] == [("A", "27.59")]


def test_viewer_gets_no_money_and_anonymous_is_refused(fleet, viewer, api):
    assert api(viewer).get(URL, {"period": "2026-03"}).status_code == 403
    usage = api(viewer).get("/api/v1/usage/", {"start": "2026-03-01", "end": "2026-04-01", "group_by": "team"})
    assert {r["cost"] for r in usage.json()["results"]} == {None}
    assert api().get(URL, {"period": "2026-03"}).status_code in (401, 403)
    assert api().post(URL + "close/", {"period": "2026-03"}).status_code in (401, 403)


def test_bad_parameters_are_400(finance, api):
    assert "period" in api(finance).get(URL, {"period": "2026-3"}).json()
    assert api(finance).get(URL, {"period": "2026-03", "group_by": "pod"}).status_code == 400


def test_csv_rows_are_lines_and_formulas_are_escaped(finance, api):
    prod = make_cluster()
    make_namespace(prod, "ml", '=HYPERLINK("x")')
    make_rate(hourly_rate="2.00")
    make_usage(make_device(prod), "ml", utc(2026, 3, 1), hours=1)
    response = api(finance).get(URL, {"period": "2026-03", "format": "csv"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(body_of(response).decode())))
    assert rows[0]["key"] == rows[0]["team"] == "'=HYPERLINK(\"x\")"
    assert (rows[0]["cost"], rows[0]["hourly_rate"], rows[0]["allocated_gpu_hours"]) == ("2.00", "2.000000", "1.0")


def test_xlsx_download(fleet, finance, api):
    make_namespace(fleet, "evil", '=HYPERLINK("x")')
    make_usage(make_device(fleet), "evil", utc(2026, 3, 9), hours=1)
    for response in (api(finance).get(URL, {"period": "2026-03", "format": "xlsx"}),
                     api(finance).get(URL + "xlsx/", {"period": "2026-03"})):
        assert response.status_code == 200
        assert "attachment" in response["Content-Disposition"]
        wb = load_workbook(io.BytesIO(response.content))
        lines = list(wb["Lines"].iter_rows(values_only=True))
        header = lines[0]
        evil = next(r for r in lines[1:] if r[header.index("namespace")] == "evil")
        assert evil[header.index("team")] == "'" + '=HYPERLINK("x")'   # text, escaped as in the CSV
        assert wb["Lines"].cell(row=lines.index(evil) + 1, column=header.index("team") + 1).data_type == "s"
        by_team = {r[0]: r for r in wb["By team"].iter_rows(min_row=2, values_only=True)}
        assert by_team["A"][-2:] == ("USD", 27.59)


def test_close_and_reopen_endpoints(fleet, finance, admin_user, team_lead, api):
    assert api(team_lead).post(URL + "close/", {"period": "2026-03"}).status_code == 403
    response = api(finance).post(URL + "close/", {"period": "2026-03"}, format="json")
    assert response.status_code == 200 and response.json()["closed"] is True
    assert "prod" in response.json()["warnings"][0]   # never ingested up to April
    assert api(finance).get(URL, {"period": "2026-03"}).json()["closed"] is True
    assert api(finance).post(URL + "close/", {"period": "2026-03"}).status_code == 409
    assert api(finance).post(URL + "reopen/", {"period": "2026-03"}).status_code == 403
    assert api(admin_user).post(URL + "reopen/", {"period": "2026-03"}).status_code == 200
    assert api(finance).get(URL, {"period": "2026-03"}).json()["closed"] is False


def test_rates_api_is_admin_only_and_audited(admin_user, finance, api):
    assert api(finance).get("/api/v1/rates/").status_code == 403
    client = api(admin_user)
    created = client.post("/api/v1/rates/", {"gpu_model": H100, "hourly_rate": "2.50", "currency": "eur",
                                             "effective_from": "2026-01-01"}, format="json")
    assert created.status_code == 201, created.json()
    rate_id = created.json()["id"]
    assert created.json()["price_class"] == "on_demand" and created.json()["currency"] == "EUR"
    assert client.patch(f"/api/v1/rates/{rate_id}/", {"hourly_rate": "2.75"}, format="json").status_code == 200
    event = AuditEvent.objects.get(action="rate.change")
    assert (event.actor, event.old_value["hourly_rate"], event.new_value["hourly_rate"]) == (
        admin_user, "2.500000", "2.750000")
    bad = client.post("/api/v1/rates/", {"gpu_model": H100, "hourly_rate": "-1", "currency": "ABC",
                                         "effective_from": "2026-01-01"}, format="json")
    assert bad.status_code == 400 and {"hourly_rate", "currency"} <= set(bad.json())
    dup = client.post("/api/v1/rates/", {"gpu_model": H100, "hourly_rate": "1", "currency": "EUR",
                                         "effective_from": "2026-01-01"}, format="json")
    assert dup.status_code == 409 and "already exists" in dup.json()["detail"]
    assert [r["hourly_rate"] for r in client.get("/api/v1/rates/").json()["results"]] == ["2.750000"]
    assert client.delete(f"/api/v1/rates/{rate_id}/").status_code == 204
    assert not Rate.objects.exists() and AuditEvent.objects.filter(action="rate.delete").exists()


def test_usage_api_multi_currency_and_wholly_unpriced_rows_have_no_cost(finance, api):
    prod = make_cluster()
    make_namespace(prod, "mixed", "A")
    make_namespace(prod, "odd", "B")
    make_rate(hourly_rate="2.00", currency="USD")
    make_rate(model=A100, hourly_rate="1.00", currency="EUR", effective_from=date(2026, 1, 1))
    make_usage(make_device(prod), "mixed", utc(2026, 3, 1))
    make_usage(make_device(prod, model=A100), "mixed", utc(2026, 3, 1))
    make_usage(make_device(prod, model="NVIDIA GB300"), "odd", utc(2026, 3, 1))
    rows = api(finance).get("/api/v1/usage/", {"start": "2026-03-01", "end": "2026-04-01",
                                                "group_by": "namespace"}).json()["results"]
    assert {r["key"]: (r["cost"], r["currency"]) for r in rows} == {"mixed": (None, None), "odd": (None, None)}
    by_model = api(finance).get("/api/v1/usage/", {"start": "2026-03-01", "end": "2026-04-01",
                                                    "group_by": "gpu_model"}).json()["results"]
    assert {r["key"]: (r["cost"], r["currency"]) for r in by_model} == {
        H100: ("2.00", "USD"), A100: ("1.00", "EUR"), "NVIDIA GB300": (None, None)}


def test_usage_api_partly_priced_row_agrees_with_the_statement(finance, api):
    """A team on one priced and one unpriced model: cost of the priced hours, unpriced hours beside it,
    the same figures as its chargeback statement row (finance reconciles the two)."""
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00", currency="USD")
    make_usage(make_device(prod), "ml", utc(2026, 3, 1), hours=3)                               # 3 h × 2.00
    make_usage(make_device(prod, host="node-9", model="NVIDIA GB300"), "ml", utc(2026, 3, 2), hours=2)
    usage = api(finance).get("/api/v1/usage/", {"start": "2026-03-01", "end": "2026-04-01",
                                                 "group_by": "team"}).json()["results"]
    assert [(r["key"], r["cost"], r["currency"], r["unpriced_gpu_hours"]) for r in usage] == [("A", "6.00", "USD", 2.0)]
    [row] = api(finance).get("/api/v1/chargeback/", {"period": "2026-03", "group_by": "team"}).json()["results"]
    assert (row["cost"], row["unpriced_gpu_hours"]) == ("6.00", 2.0)
    only_unpriced = api(finance).get("/api/v1/usage/", {"start": "2026-03-02", "end": "2026-03-03",
                                                         "group_by": "team"}).json()["results"]
    assert [(r["cost"], r["unpriced_gpu_hours"]) for r in only_unpriced] == [(None, 2.0)]
