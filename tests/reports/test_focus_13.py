"""/api/v1/chargeback/focus/?focus_version=1.3: FOCUS 1.3's columns (ServiceProviderName,
HostProviderName, the deprecated ProviderName and PublisherName kept, no commitment columns) and its
split cost allocation columns on the rows of shared idle spread over teams, with hand-computed
figures (docs/chargeback.md, "FOCUS 1.3"). The FinOps validator that checks 1.3 (2.x) needs
Python 3.12 and downloads its rules at run time, so the 1.3 rules the export relies on are checked
here, one by one (`check_focus_13`)."""
import json
import re
from collections import defaultdict
from decimal import Decimal as D

import pytest

from apps.accounting.actions.periods import do_close_period
from apps.accounting.ledger.statements import statement
from apps.reports.focus_csv import FOCUS_13_COLUMNS
from apps.reports.statement_rows import statement_payload
from tests.reports.test_focus_export import URL, april, billed_by_currency, export, fleet, pick  # noqa: F401

pytestmark = pytest.mark.django_db

LEGACY = {"ChargeType", "InvoiceIssuer", "Provider", "Publisher", "ResourceID"}


def spread_totals(period, scope=None):
    return statement_payload(statement(period, shared_idle="spread"), "team", scope)


def check_focus_13(rows):
    """The FOCUS 1.3 Cost and Usage rules the export's columns must keep (docs/chargeback.md, "FOCUS 1.3")."""
    names = set(rows[0])
    assert not LEGACY & names                                  # 1.0-preview names: custom columns without x_
    assert all(n in FOCUS_13_COLUMNS or n.startswith("x_") for n in names)
    assert {"ServiceProviderName", "HostProviderName", "ProviderName", "PublisherName", "InvoiceIssuerName",
            "AllocatedMethodId", "AllocatedMethodDetails", "AllocatedResourceId", "AllocatedResourceName",
            "AllocatedTags"} <= names
    assert not {c for c in names if c.startswith("CommitmentDiscount")}
    ratios = defaultdict(D)
    for r in rows:
        assert r["ServiceProviderName"] and r["HostProviderName"] and r["InvoiceIssuerName"]
        assert r["ProviderName"] == r["ServiceProviderName"]    # deprecated, replaced by ServiceProviderName
        assert D(r["ListCost"]) == D(r["ListUnitPrice"]) * D(r["PricingQuantity"]) or r["ChargeClass"] == "Correction"
        split = bool(r["AllocatedMethodId"])
        # The unallocated portion of an origin charge after the split names no allocated resource.
        allocated = split and r["SubAccountId"] != "unallocated"
        # AllocatedResourceId / Name, AllocatedTags and the details: null unless the row is a split cost
        assert bool(r["AllocatedResourceId"]) == bool(r["AllocatedResourceName"]) == allocated
        assert bool(r["AllocatedMethodDetails"]) == split and bool(r["AllocatedTags"]) == allocated
        if split:
            details = json.loads(r["AllocatedMethodDetails"])
            [element] = details["Elements"]
            assert isinstance(element["AllocatedRatio"], float) and 0 <= element["AllocatedRatio"] <= 1
            assert all(k in ("AllocatedRatio", "UsageUnit", "UsageQuantity") or re.fullmatch(r"x_[A-Z][a-zA-Z0-9]*", k)
                       for k in element)
            assert "UsageQuantity" not in element or isinstance(element["UsageUnit"], str)
            if allocated:
                assert not set(json.loads(r["AllocatedTags"])) & set(json.loads(r["Tags"]))
            origin = (r["AllocatedMethodId"], r["ResourceId"], r["SkuPriceId"], r["ChargePeriodStart"])
            ratios[origin] += D(repr(element["AllocatedRatio"]))
    # Each origin charge's allocated ratios add up to 1 (100 %).
    assert all(total == 1 for total in ratios.values()), ratios
    return ratios


def test_13_columns_apart(fleet, finance, api, settings):
    settings.FOCUS_HOST_PROVIDER_NAME = "Example Cloud"
    text, rows = export(api(finance), period="2026-03", focus_version="1.3")
    check_focus_13(rows)
    assert billed_by_currency(rows) == {"USD": "32.91"}
    assert {(r["ServiceProviderName"], r["HostProviderName"], r["PublisherName"], r["ServiceSubcategory"])
            for r in rows} == {("gpuportal", "Example Cloud", "gpuportal", "Other (AI and Machine Learning)")}
    assert not any(r["AllocatedMethodId"] for r in rows)        # nothing was split
    [idle] = pick(rows, x_ChargeKind="unallocated")
    assert (idle["SubAccountId"], idle["BilledCost"]) == ("unallocated", "5.00")


def test_shared_idle_spread_is_a_split_cost(fleet, finance, team_lead, api):
    """Unallocated: 2 h of an on-demand H100 on Mar 3 = 5.00. Allocated H100 cost on prod in USD:
    A 20.00 + 2.00 + 3.2142857 = 176.5/7, B 2.70 = 18.9/7, so A's share is 176.5/195.4 =
    0.90327533… and B's 0.09672466…: 5.00 splits 4.5163… and 0.4836… → 4.52 and 0.48 (the cent
    to the larger remainder, A's); the ratios to 6 places 0.903275 and 0.096724 + the missing
    millionth (B's remainder is larger) = 0.096725. Quantities are that share of the 2 h."""
    _, rows = export(api(finance), period="2026-03", focus_version="1.3", shared_idle="spread")
    check_focus_13(rows)
    assert billed_by_currency(rows) == spread_totals("2026-03")["totals_by_currency"] == {"USD": "32.91"}
    assert not pick(rows, x_ChargeKind="unallocated")
    split = pick(rows, x_ChargeKind="shared_idle")
    assert [(r["SubAccountId"], r["ChargePeriodStart"], r["ResourceId"], r["ResourceType"], r["PricingQuantity"],
             r["BilledCost"], r["ListCost"], r["AllocatedResourceId"], r["AllocatedResourceName"]) for r in split] == [
        ("A", "2026-03-03T00:00:00Z", "prod", "Kubernetes cluster", "1.806551", "4.52", "4.516377500000", "A", "A"),
        ("B", "2026-03-03T00:00:00Z", "prod", "Kubernetes cluster", "0.193449", "0.48", "0.483622500000", "B", "B")]
    assert [json.loads(r["AllocatedMethodDetails"])["Elements"][0]["AllocatedRatio"] for r in split] == [
        0.903275, 0.096725]
    for r in split:
        assert r["AllocatedMethodId"] == "gpuportal/shared-idle-by-allocated-cost"
        assert json.loads(r["Tags"]) == {"gpuportal/cluster": "prod"}
        assert json.loads(r["AllocatedTags"]) == {"gpuportal/team": r["SubAccountId"]}
        assert (r["SkuPriceId"], r["ListUnitPrice"]) == ("NVIDIA H100 80GB HBM3:gpu:on_demand@2.500000 USD/GPU-Hour",
                                                        "2.500000")
    # Each team's rows add up to its row of the statement spread (A 25.21 + 4.52, B 2.70 + 0.48).
    by_team = {t["team"]: t["cost"] for t in spread_totals("2026-03")["results"]}
    assert {t: str(sum(D(r["BilledCost"]) for r in pick(rows, SubAccountId=t))) for t in ("A", "B")} == {
        "A": "29.73", "B": "3.18"} == {t: by_team[t] for t in ("A", "B")}
    # A team lead sees their share only.
    _, lead_rows = export(api(team_lead), period="2026-03", focus_version="1.3", shared_idle="spread")
    assert {r["SubAccountId"] for r in lead_rows} == {"A"} and billed_by_currency(lead_rows) == {"USD": "29.73"}


def test_spread_in_10_has_the_rows_without_the_13_columns(fleet, finance, api):
    _, rows = export(api(finance), period="2026-03", shared_idle="spread")
    assert "AllocatedMethodId" not in rows[0] and "ChargeType" in rows[0]
    assert [(r["SubAccountId"], r["BilledCost"]) for r in pick(rows, x_ChargeKind="shared_idle")] == [
        ("A", "4.52"), ("B", "0.48")]
    assert billed_by_currency(rows) == {"USD": "32.91"}


@pytest.mark.parametrize("closed", [False, True], ids=["open", "closed"])
def test_13_with_corrections_and_spread_keeps_the_total(fleet, finance, api, closed):
    do_close_period("2026-03", actor=finance)
    april(fleet[1])
    if closed:
        do_close_period("2026-04", actor=finance)
    _, rows = export(api(finance), period="2026-04", focus_version="1.3", shared_idle="spread")
    check_focus_13(rows)
    # April's unallocated spot hour (0.90) is spread over the teams' allocated H100 cost in USD
    # (April's own usage, not the corrections): A 10.00 + 1.20, B 1.80, so A 11.20/13.00 of
    # 0.90 = 0.7754 → 0.78 (the larger remainder takes the missing cent), B 0.1246 → 0.12.
    assert billed_by_currency(rows) == {"EUR": "2.80", "USD": "18.00"}
    assert [(r["SubAccountId"], r["BilledCost"]) for r in pick(rows, x_ChargeKind="shared_idle")] == [
        ("A", "0.78"), ("B", "0.12")]
    assert pick(rows, ChargeClass="Correction") and not any(r["AllocatedMethodId"] for r in
                                                            pick(rows, ChargeClass="Correction"))


def test_bad_versions_and_legacy_names_with_13(finance, api):
    bad = api(finance).get(URL, {"period": "2026-03", "focus_version": "1.2"})
    assert bad.status_code == 400 and "focus_version='1.2' is not one of 1.0, 1.3" in bad.content.decode()
    bad = api(finance).get(URL, {"period": "2026-03", "focus_version": "1.3", "legacy_names": "include"})
    assert bad.status_code == 400 and "legacy_names=include is for FOCUS 1.0 only" in bad.content.decode()
    bad = api(finance).get(URL, {"period": "2026-03", "shared_idle": "evenly"})
    assert bad.status_code == 400 and "shared_idle='evenly' is not one of apart, spread" in bad.content.decode()
