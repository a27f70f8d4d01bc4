"""/api/v1/chargeback/focus/: a month as FOCUS 1.0 CSV, one row per statement line and day, whose
BilledCost adds up to the statement's total exactly, open or closed, adjustments included;
scoped like the statement; and accepted by the FinOps focus-validator."""
import csv
import io
import json
import os
import subprocess
from collections import defaultdict
from decimal import Decimal as D
from pathlib import Path

import pytest
from django.db import connection

from apps.accounting.actions.periods import do_close_period
from apps.accounting.models import FrozenDay, Rate, UsageHour
from apps.accounting.ledger.statements import statement
from apps.reports.statement_rows import statement_payload
from tests.support.bodies import body_of

from tests.support.factories import (A100, H100, make_cluster, make_device, make_namespace, make_pool, make_rate, make_team,
                        make_usage, utc)

pytestmark = pytest.mark.django_db
URL = "/api/v1/chargeback/focus/"


@pytest.fixture
def fleet(team_lead):
    """prod: team A (lead: team_lead) runs ml, team B runs serve; H100 2.50 on demand, 0.90 spot
    (nodes spot-*), 1g.10gb 0.40 per instance-hour, A100 1.40 EUR; a T4 nobody priced.

    March: A ml 8 h on node-1 from Mar 2 20:00 (4 h each on the 2nd and 3rd), 5 h of a 1g.10gb
    instance on Mar 4, 3 h of a 3g.40gb instance (no own rate: 3/7 of an H100) from Mar 6 22:00;
    B serve 3 h on spot-1 on Mar 5 10:00-13:00 and 3 h of a T4; 2 h of node-1 unallocated on Mar 3.
    """
    prod = make_cluster()
    make_team("A", lead=team_lead)
    make_namespace(prod, "ml", "A")
    make_namespace(prod, "serve", "B")
    make_pool(prod, "spot-*", "spot")
    make_rate(hourly_rate="2.50")
    make_rate(hourly_rate="0.90", price_class="spot")
    make_rate(hourly_rate="0.40", mig_profile="1g.10gb")
    make_rate(model=A100, hourly_rate="1.40", currency="EUR")
    devices = {
        "gpu": make_device(prod, host="node-1"),
        "spot": make_device(prod, host="spot-1"),
        "small": make_device(prod, host="node-2", mig_profile="1g.10gb", fraction=1 / 7),
        "big": make_device(prod, host="node-3", mig_profile="3g.40gb", fraction=3 / 7),
        "a100": make_device(prod, host="node-4", model=A100),
        "t4": make_device(prod, host="node-5", model="Tesla T4"),
    }
    make_usage(devices["gpu"], "ml", utc(2026, 3, 2, 20), hours=8)
    make_usage(devices["small"], "ml", utc(2026, 3, 4), hours=5)
    make_usage(devices["big"], "ml", utc(2026, 3, 6, 22), hours=3)
    make_usage(devices["spot"], "serve", utc(2026, 3, 5, 10), hours=3)
    make_usage(devices["t4"], "serve", utc(2026, 3, 5), hours=3)
    make_usage(devices["gpu"], "", utc(2026, 3, 3, 4), hours=2)
    return prod, devices


def april(devices):
    """After March is closed: late data for March (2 h of ml on Mar 31 22:00, +5.00) and a
    re-ingest that lost one of serve's spot hours (-0.90); April's own usage: A 4 h on node-1
    (10.00) and 3 h of 1g.10gb (1.20); B 2 h spot from Apr 2 23:00 (1.80) and 2 h A100 (2.80 EUR);
    1 h of spot-1 unallocated (0.90)."""
    make_usage(devices["gpu"], "ml", utc(2026, 3, 31, 22), hours=2, pod="late")
    UsageHour.objects.filter(namespace="serve", hour_start=utc(2026, 3, 5, 12)).delete()
    make_usage(devices["gpu"], "ml", utc(2026, 4, 1, 10), hours=4)
    make_usage(devices["small"], "ml", utc(2026, 4, 2), hours=3)
    make_usage(devices["spot"], "serve", utc(2026, 4, 2, 23), hours=2)
    make_usage(devices["a100"], "serve", utc(2026, 4, 5), hours=2)
    make_usage(devices["spot"], "", utc(2026, 4, 4), hours=1)


def export(client, **params):
    response = client.get(URL, params)
    assert response.status_code == 200, body_of(response)[:500]
    assert response["Content-Type"].startswith("text/csv")
    text = body_of(response).decode()
    return text, list(csv.DictReader(io.StringIO(text)))


def billed_by_currency(rows):
    totals = defaultdict(D)
    for r in rows:
        totals[r["BillingCurrency"]] += D(r["BilledCost"])
    return {c: str(a) for c, a in sorted(totals.items())}


def statement_totals(period, scope=None):
    return statement_payload(statement(period), "team", scope)["totals_by_currency"]


def pick(rows, **match):
    return [r for r in rows if all(r[k] == v for k, v in match.items())]


# ---------------------------------------------------------------- the rows, hand-computed

def test_open_month_rows_per_day_with_hand_computed_figures(fleet, finance, api):
    text, rows = export(api(finance), period="2026-03")
    # A: 8 h × 2.50 = 20.00; 5 instance-h × 0.40 = 2.00; 3 × 3/7 GPU-h × 2.50 = 3.2142… → 3.21.
    # B: 3 h × 0.90 = 2.70 (the T4 is unpriced: no row). Unallocated: 2 h × 2.50 = 5.00.
    assert billed_by_currency(rows) == statement_totals("2026-03") == {"USD": "32.91"}
    whole = pick(rows, SubAccountId="A", x_MigProfile="", x_ChargeKind="usage")
    assert [(r["ChargePeriodStart"], r["ChargePeriodEnd"], r["PricingQuantity"], r["BilledCost"]) for r in whole] == [
        ("2026-03-02T00:00:00Z", "2026-03-03T00:00:00Z", "4.000000", "10.00"),
        ("2026-03-03T00:00:00Z", "2026-03-04T00:00:00Z", "4.000000", "10.00")]
    [small] = pick(rows, x_MigProfile="1g.10gb")
    assert (small["PricingUnit"], small["ConsumedUnit"], small["PricingQuantity"], small["ConsumedQuantity"],
            small["ListUnitPrice"], small["BilledCost"]) == ("Instance-Hours", "Instance-Hours", "5.000000",
                                                             "5.000000", "0.400000", "2.00")
    assert small["x_AllocatedGpuHours"] == "0.714286" and small["x_UsedGpuHours"] == "0.357143"   # 5/7, half used
    assert small["x_Efficiency"] == "0.500000"
    big = pick(rows, x_MigProfile="3g.40gb")
    # 2 h on the 6th: 6/7 GPU-h × 2.50 = 2.142857 → 2.14; 1 h on the 7th: 3/7 × 2.50 = 1.071428 → 1.07
    assert [(r["ChargePeriodStart"][:10], r["PricingUnit"], r["PricingQuantity"], r["BilledCost"]) for r in big] == [
        ("2026-03-06", "GPU-Hours", "0.857143", "2.14"), ("2026-03-07", "GPU-Hours", "0.428571", "1.07")]
    assert [r["ListCost"] for r in big] == ["2.142857500000", "1.071427500000"]   # 2.500000 × the quantity
    [spot] = pick(rows, SubAccountId="B")
    assert (spot["x_PriceClass"], spot["PricingCategory"], spot["ListUnitPrice"], spot["BilledCost"],
            spot["ResourceId"], spot["ResourceType"]) == ("spot", "Dynamic", "0.900000", "2.70", "prod/serve",
                                                          "Kubernetes namespace")
    assert not pick(rows, x_GpuModel="Tesla T4")
    [idle] = pick(rows, x_ChargeKind="unallocated")
    assert (idle["SubAccountId"], idle["ResourceId"], idle["ResourceType"], idle["BilledCost"], idle["x_Namespace"]) \
        == ("unallocated", "prod", "Kubernetes cluster", "5.00", "")
    for r in rows:
        assert r["ChargeCategory"] == r["ChargeType"] == "Usage" and r["ChargeClass"] == ""
        assert r["ChargeFrequency"] == "Usage-Based"
        assert r["BillingPeriodStart"] == "2026-03-01T00:00:00Z" and r["BillingPeriodEnd"] == "2026-04-01T00:00:00Z"
        assert r["BilledCost"] == r["EffectiveCost"]
        # FOCUS 1.0: ListCost = ListUnitPrice × PricingQuantity (ContractedCost likewise), unrounded
        assert D(r["ListCost"]) == D(r["ListUnitPrice"]) * D(r["PricingQuantity"]) == D(r["ContractedCost"])
        assert r["ListUnitPrice"] == r["ContractedUnitPrice"] and r["BillingCurrency"] == "USD"
        assert r["ProviderName"] == r["PublisherName"] == r["InvoiceIssuerName"] == r["Provider"] == "gpuportal"
        assert r["ServiceCategory"] == "AI and Machine Learning" and r["ResourceID"] == r["ResourceId"]
        assert r["x_Cluster"] == "prod" and r["x_GpuModel"] == H100
    assert json.loads(whole[0]["Tags"]) == {"gpuportal/cluster": "prod", "gpuportal/namespace": "ml",
                                            "gpuportal/team": "A"}
    assert json.loads(idle["Tags"]) == {"gpuportal/cluster": "prod"}


def test_a_closed_month_exports_the_rows_it_had_open(fleet, finance, api):
    before, _ = export(api(finance), period="2026-03")
    do_close_period("2026-03", actor=finance)
    make_usage(fleet[1]["gpu"], "ml", utc(2026, 3, 20), hours=5, pod="late")     # late data: April's business
    on_demand = Rate.objects.get(gpu_model=H100, mig_profile="", price_class="on_demand")
    on_demand.hourly_rate = D("9.00")                                              # rate edits after the close
    on_demand.save()
    with connection.cursor() as cur:        # past the guard that refuses it (docs/chargeback.md, "History stays")
        cur.execute(f"DELETE FROM {Rate._meta.db_table} WHERE price_class = 'spot'")
    after, rows = export(api(finance), period="2026-03")
    assert after == before
    assert billed_by_currency(rows) == statement_totals("2026-03") == {"USD": "32.91"}


def test_a_line_without_day_figures_is_one_row_for_its_month(fleet, finance, api):
    """Should a closed month's frozen cells be missing, each line still gives its cost, as one
    row over the whole month: the total never depends on the day breakdown."""
    do_close_period("2026-03", actor=finance)
    FrozenDay.objects.all().delete()
    _, rows = export(api(finance), period="2026-03")
    assert billed_by_currency(rows) == {"USD": "32.91"}
    assert {(r["ChargePeriodStart"], r["ChargePeriodEnd"]) for r in rows} == {("2026-03-01T00:00:00Z",
                                                                              "2026-04-01T00:00:00Z")}
    assert sorted((r["x_MigProfile"], r["PricingQuantity"], r["BilledCost"]) for r in rows) == [
        ("", "2.000000", "5.00"), ("", "3.000000", "2.70"), ("", "8.000000", "20.00"),
        ("1g.10gb", "5.000000", "2.00"), ("3g.40gb", "1.285714", "3.21")]


@pytest.mark.parametrize("closed", [False, True], ids=["april-open", "april-closed"])
def test_adjustments_are_usage_corrections_and_the_total_holds(fleet, finance, api, closed):
    do_close_period("2026-03", actor=finance)
    april(fleet[1])
    if closed:
        do_close_period("2026-04", actor=finance)
    text, rows = export(api(finance), period="2026-04")
    # USD: A 10.00 + 1.20 + 5.00 (late March); B 1.80 - 0.90 (lost March hour); unallocated 0.90. EUR: 2 h × 1.40.
    assert billed_by_currency(rows) == statement_totals("2026-04") == {"EUR": "2.80", "USD": "18.00"}
    corrections = pick(rows, ChargeClass="Correction")
    assert [(r["SubAccountId"], r["ChargePeriodStart"], r["ChargePeriodEnd"], r["PricingQuantity"], r["BilledCost"],
             r["x_AdjustsPeriod"], r["x_ChargeKind"], r["ChargeCategory"]) for r in corrections] == [
        ("A", "2026-03-31T00:00:00Z", "2026-04-01T00:00:00Z", "2.000000", "5.00", "2026-03", "adjustment", "Usage"),
        ("B", "2026-03-05T00:00:00Z", "2026-03-06T00:00:00Z", "-1.000000", "-0.90", "2026-03", "adjustment", "Usage")]
    # FOCUS 1.0 on corrections too: ListCost = ListUnitPrice × PricingQuantity, not the rounded BilledCost
    assert [(r["ListUnitPrice"], r["PricingQuantity"], r["ListCost"], r["ContractedCost"]) for r in corrections] == [
        ("2.500000", "2.000000", "5.000000000000", "5.000000000000"),
        ("0.900000", "-1.000000", "-0.900000000000", "-0.900000000000")]
    assert all(r["BillingPeriodStart"] == "2026-04-01T00:00:00Z" for r in rows)
    assert [(r["ChargePeriodStart"][:10], r["BilledCost"]) for r in pick(rows, SubAccountId="B", x_PriceClass="spot",
                                                                          x_ChargeKind="usage")] == [
        ("2026-04-02", "0.90"), ("2026-04-03", "0.90")]
    # The raw text: the negative correction is a number, not a formula-escaped text ('-0.90).
    line = next(raw for raw in text.splitlines() if "correcting 2026-03" in raw and "prod/serve" in raw)
    assert ",-0.90," in line and ",-1.000000," in line and "'-" not in text
    assert corrections[1]["ChargeDescription"] == ("GPU-Hours of NVIDIA H100 80GB HBM3 (spot), correcting 2026-03 "
                                                   "(late or re-ingested data)")
    assert corrections[1]["SkuPriceId"] == "NVIDIA H100 80GB HBM3:gpu:spot@0.900000 USD/GPU-Hour"


def test_reserved_is_no_commitment_discount(finance, api):
    """FOCUS 1.0's `Committed` means a price reduced by a commitment named in CommitmentDiscountId;
    the portal's `reserved` class is a rate of its own, so it is `Other` (docs/chargeback.md)."""
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_pool(prod, "res-*", "reserved")
    make_rate(hourly_rate="1.25", price_class="reserved")
    make_usage(make_device(prod, host="res-1"), "ml", utc(2026, 3, 2), hours=2)
    _, [row] = export(api(finance), period="2026-03")
    assert (row["x_PriceClass"], row["PricingCategory"], row["CommitmentDiscountId"]) == ("reserved", "Other", "")
    assert (row["BilledCost"], row["ListCost"]) == ("2.50", "2.500000000000")


def test_yen_are_split_in_whole_yen(finance, api):
    """JPY has no minor unit: 3 h of a 3g.40gb (3/7 GPU) at 250 yen per GPU-hour from Mar 6 22:00
    cost 9/7 × 250 = 321.43 → 321 yen, split 214.29 → 214 (the 6th) and 107.14 → 107 (the 7th)."""
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="250", currency="JPY")
    make_usage(make_device(prod, mig_profile="3g.40gb", fraction=3 / 7), "ml", utc(2026, 3, 6, 22), hours=3)
    _, rows = export(api(finance), period="2026-03")
    assert [(r["ChargePeriodStart"][:10], r["BilledCost"], r["BillingCurrency"]) for r in rows] == [
        ("2026-03-06", "214", "JPY"), ("2026-03-07", "107", "JPY")]
    assert billed_by_currency(rows) == statement_totals("2026-03") == {"JPY": "321"}


def test_a_non_utc_billing_zone_gives_local_days_as_utc_instants(settings, finance, api):
    settings.BILLING_TIMEZONE = "America/New_York"      # DST starts on 8 March 2026: a 23-hour day
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="1.00")
    make_usage(make_device(prod), "ml", utc(2026, 3, 8, 20), hours=6)    # 16:00-22:00 EDT on the 8th
    _, rows = export(api(finance), period="2026-03")
    [r] = rows
    assert (r["ChargePeriodStart"], r["ChargePeriodEnd"]) == ("2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z")
    assert (r["BillingPeriodStart"], r["BillingPeriodEnd"]) == ("2026-03-01T05:00:00Z", "2026-04-01T04:00:00Z")
    assert (r["PricingQuantity"], r["BilledCost"]) == ("6.000000", "6.00")


@pytest.mark.postgres   # the query counts assume the stored month answers
def test_queries_do_not_grow_with_teams_or_days(fleet, finance, api, django_assert_max_num_queries):
    prod, devices = fleet
    for i in range(12):     # 12 more teams, each on 3 days
        make_namespace(prod, f"ns{i}", f"T{i}")
        make_usage(make_device(prod, host=f"extra-{i}"), f"ns{i}", utc(2026, 3, 10 + i, 22), hours=30)
    with django_assert_max_num_queries(44):     # the first export computes and stores the month's lines and days
        # (and reads the team mapping's version where it takes the resolver: apps/accounting/usage/team_mapping.py;
        # before storing, asks whether the month is of the fleet's history: answers.month_kept)
        export(api(finance), period="2026-03")
    with django_assert_max_num_queries(12):     # the role, the month, rates, teams, usage, closed months,
        _, rows = export(api(finance), period="2026-03")   # the inputs' version, the stored lines
    assert len(rows) == 7 + 12 * 3
    do_close_period("2026-03", actor=finance)
    with django_assert_max_num_queries(6):      # the role, the period, rate history, frozen cells, lines
        _, closed_rows = export(api(finance), period="2026-03")
    assert closed_rows == rows


# ---------------------------------------------------------------- who sees what

def test_scoped_like_the_statement(fleet, finance, team_lead, viewer, api):
    _, lead_rows = export(api(team_lead), period="2026-03")
    assert {r["SubAccountId"] for r in lead_rows} == {"A"}           # no B, no unallocated capacity
    assert billed_by_currency(lead_rows) == statement_totals("2026-03", {"A"}) == {"USD": "25.21"}
    assert export(api(team_lead), period="2026-03", team="A")[1] == lead_rows
    refused = api(team_lead).get(URL, {"period": "2026-03", "team": "B"})
    assert refused.status_code == 403 and "B" in refused.content.decode()
    _, b_rows = export(api(finance), period="2026-03", team="B")
    assert {r["SubAccountId"] for r in b_rows} == {"B"} and billed_by_currency(b_rows) == {"USD": "2.70"}
    assert api(viewer).get(URL, {"period": "2026-03"}).status_code == 403
    assert api().get(URL, {"period": "2026-03"}).status_code in (401, 403)


def test_bad_parameters_are_one_line_400s(finance, api):
    bad = api(finance).get(URL, {"period": "2026-13"})
    assert bad.status_code == 400 and "period='2026-13' is not a month" in bad.content.decode()
    bad = api(finance).get(URL, {"period": "2026-03", "legacy_names": "maybe"})
    assert bad.status_code == 400 and "legacy_names='maybe' is not one of include, omit" in bad.content.decode()


def test_legacy_names_can_be_left_out(fleet, finance, api):
    _, rows = export(api(finance), period="2026-03", legacy_names="omit")
    names = set(rows[0])
    assert {"ProviderName", "ResourceId", "x_MigProfile"} <= names
    assert not {"ChargeType", "Provider", "Publisher", "InvoiceIssuer", "ResourceID"} & names


def test_settings_name_the_provider_and_billing_account(fleet, finance, api, settings):
    settings.FOCUS_PROVIDER_NAME = "Example Research GPU Cloud"
    settings.FOCUS_BILLING_ACCOUNT_ID = "acct-7"
    settings.FOCUS_BILLING_ACCOUNT_NAME = "Research computing"
    _, rows = export(api(finance), period="2026-03")
    assert {(r["ProviderName"], r["InvoiceIssuerName"], r["BillingAccountId"], r["BillingAccountName"])
            for r in rows} == {("Example Research GPU Cloud", "Example Research GPU Cloud", "acct-7",
                                "Research computing")}


# ---------------------------------------------------------------- the FinOps validator

ROOT = Path(__file__).resolve().parents[2]
# focus-validator runs in its own environment, made by `make setup` from
# tests/reports/focus-validator.txt, so its pins never hold back the portal's packages.
FOCUS_VENV = Path(os.environ.get("FOCUS_VENV") or ROOT / ".venv-focus")
FOCUS_VALIDATOR = FOCUS_VENV / "bin" / "focus-validator"
# `make test` names the environment, so there a missing validator fails instead of skipping.
NEEDED = "FOCUS_VENV" in os.environ


def run_focus_validator(path: Path) -> str:
    """focus-validator 1.0.0, as its console script; run from the directory holding the package,
    where it looks for its list of currency codes."""
    package = next(FOCUS_VENV.glob("lib/python*/site-packages/focus_validator"))
    result = subprocess.run([str(FOCUS_VALIDATOR), "--data-file", str(path), "--validate-version", "1.0"],
                            cwd=package.parent, capture_output=True, text=True, timeout=300)
    return result.stdout + result.stderr


@pytest.mark.skipif(not NEEDED and not FOCUS_VALIDATOR.exists(), reason=f"{FOCUS_VALIDATOR} is missing: `make setup` makes it")
def test_focus_validator_accepts_a_month_with_usage_mig_spot_unallocated_and_corrections(fleet, finance, api,
                                                                                         tmp_path):
    do_close_period("2026-03", actor=finance)
    april(fleet[1])
    do_close_period("2026-04", actor=finance)
    text, rows = export(api(finance), period="2026-04")
    kinds = {(r["x_ChargeKind"], r["x_MigProfile"], r["x_PriceClass"], r["ChargeClass"]) for r in rows}
    assert {("usage", "1g.10gb", "on_demand", ""), ("usage", "", "spot", ""), ("unallocated", "", "spot", ""),
            ("adjustment", "", "spot", "Correction")} <= kinds
    path = tmp_path / "focus-2026-04.csv"
    path.write_text(text)
    output = run_focus_validator(path)
    assert "Validation succeeded." in output, output[-3000:]


def test_a_corrections_charge_period_is_a_day_of_the_corrected_months_zone(finance, api, settings):
    """March closed in Europe/Berlin; BILLING_TIMEZONE is then UTC. A late hour of 10 March 12:00
    UTC is a correction in April whose charge period is Berlin's 10 March, 2026-03-09T23:00Z to
    2026-03-10T23:00Z (CET), not UTC's day."""
    settings.BILLING_TIMEZONE = "Europe/Berlin"
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00")
    gpu = make_device(prod)
    make_usage(gpu, "ml", utc(2026, 3, 10, 8))
    do_close_period("2026-03", actor=finance)
    settings.BILLING_TIMEZONE = "UTC"
    make_usage(gpu, "ml", utc(2026, 3, 10, 12), pod="late")
    _, rows = export(api(finance), period="2026-04")
    [row] = pick(rows, ChargeClass="Correction")
    assert (row["ChargePeriodStart"], row["ChargePeriodEnd"], row["BilledCost"]) == (
        "2026-03-09T23:00:00Z", "2026-03-10T23:00:00Z", "2.00")
