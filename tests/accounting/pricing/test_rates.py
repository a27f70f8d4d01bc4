"""Statement costs from rollups, hand-computed: rate changes, MIG, spot, zones, unpriced, currencies."""
from datetime import date
from decimal import Decimal

import pytest

from apps.accounting.pricing.rates import rate_for
from apps.accounting.ledger.statements import statement
from apps.reports.statement_rows import statement_payload

from tests.support.factories import (A100, H100, make_cluster, make_device, make_namespace, make_pool, make_rate, make_usage,
                        utc)

pytestmark = pytest.mark.django_db


def payload(period="2026-03", group_by="team", scope=None, shared_idle="apart"):
    return statement_payload(statement(period, shared_idle=shared_idle), group_by, scope, shared_idle)


def team_row(p, key):
    return next(r for r in p["results"] if r["key"] == key)


def test_mid_month_rate_change():
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00", effective_from=date(2026, 1, 1))
    make_rate(hourly_rate="3.00", effective_from=date(2026, 3, 16))
    gpu = make_device(prod)
    make_usage(gpu, "ml", utc(2026, 3, 15, 10), hours=10)
    make_usage(gpu, "ml", utc(2026, 3, 16, 10), hours=5)
    a = team_row(payload(), "A")
    # 10 h × 2.00 + 5 h × 3.00 = 35.00, on two lines
    assert a["cost"] == "35.00" and a["currency"] == "USD"
    assert [(line["hourly_rate"], line["allocated_gpu_hours"], line["cost"]) for line in a["lines"]] == [
        ("2.000000", 10.0, "20.00"), ("3.000000", 5.0, "15.00")]
    assert a["allocated_gpu_hours"] == 15.0 and a["used_gpu_hours"] == 7.5 and a["efficiency"] == 0.5


def test_mig_profile_rate_and_parent_fallback():
    prod = make_cluster()
    make_namespace(prod, "serve", "A")
    make_rate(hourly_rate="2.00")
    make_rate(hourly_rate="0.50", mig_profile="1g.10gb")
    small = make_device(prod, mig_profile="1g.10gb", fraction=1 / 7)
    big = make_device(prod, mig_profile="3g.40gb", fraction=3 / 7)
    make_usage(small, "serve", utc(2026, 3, 2), hours=14)
    make_usage(big, "serve", utc(2026, 3, 2), hours=7)
    lines = {line["mig_profile"]: line for line in team_row(payload(), "A")["lines"]}
    # 14 instance-hours × 0.50 = 7.00
    assert lines["1g.10gb"]["cost"] == "7.00" and lines["1g.10gb"]["billed_unit"] == "instance-hour"
    assert lines["1g.10gb"]["allocated_gpu_hours"] == pytest.approx(2.0)
    # 7 instance-hours × 3/7 = 3 GPU-hours × 2.00 = 6.00
    assert lines["3g.40gb"]["cost"] == "6.00" and lines["3g.40gb"]["billed_unit"] == "GPU-hour"
    assert team_row(payload(), "A")["cost"] == "13.00"


def test_spot_nodes_at_spot_prices():
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_pool(prod, "spot-*", "spot")
    make_rate(hourly_rate="2.00")
    make_rate(hourly_rate="0.80", price_class="spot")
    make_usage(make_device(prod, host="spot-node-1"), "ml", utc(2026, 3, 3), hours=10)
    make_usage(make_device(prod, host="node-1"), "ml", utc(2026, 3, 3), hours=10)
    lines = {line["price_class"]: line["cost"] for line in team_row(payload(), "A")["lines"]}
    assert lines == {"spot": "8.00", "on_demand": "20.00"}   # 10 h × 0.80, 10 h × 2.00
    assert team_row(payload(), "A")["cost"] == "28.00"
    assert rate_for(H100, "", "spot", date(2026, 3, 3)) == (Decimal("0.80"), "USD")
    assert rate_for(H100, "", "reserved", date(2026, 3, 3)) is None


def test_month_boundary_in_billing_zone(settings):
    settings.BILLING_TIMEZONE = "America/New_York"   # 2026-03-01 00:00 EST = 05:00 UTC
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="1.00", effective_from=date(2026, 1, 1))
    make_rate(hourly_rate="4.00", effective_from=date(2026, 3, 1))   # from March 1st, New York midnight
    gpu = make_device(prod)
    make_usage(gpu, "ml", utc(2026, 3, 1, 3), hours=2)   # 03:00-05:00 UTC: still February in New York
    make_usage(gpu, "ml", utc(2026, 3, 1, 5), hours=3)   # March
    feb, mar = team_row(payload("2026-02"), "A"), team_row(payload("2026-03"), "A")
    assert (feb["allocated_gpu_hours"], feb["cost"]) == (2.0, "2.00")     # 2 h × 1.00
    assert (mar["allocated_gpu_hours"], mar["cost"]) == (3.0, "12.00")    # 3 h × 4.00


def test_unknown_model_is_unpriced_with_its_hours():
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00")
    make_usage(make_device(prod, model="NVIDIA GB300"), "ml", utc(2026, 3, 4), hours=4)
    make_usage(make_device(prod), "ml", utc(2026, 3, 4), hours=1)
    a = team_row(payload(), "A")
    unpriced = next(line for line in a["lines"] if line["gpu_model"] == "NVIDIA GB300")
    assert unpriced["unpriced"] is True and unpriced["cost"] is None and unpriced["allocated_gpu_hours"] == 4.0
    assert a["unpriced_gpu_hours"] == 4.0 and a["cost"] == "2.00"


def test_currencies_are_never_summed():
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00", currency="USD")
    make_rate(model=A100, hourly_rate="1.50", currency="EUR")
    make_usage(make_device(prod), "ml", utc(2026, 3, 5), hours=2)
    make_usage(make_device(prod, model=A100), "ml", utc(2026, 3, 5), hours=2)
    p = payload()
    a = team_row(p, "A")
    assert a["cost"] is None and a["currency"] is None
    assert a["costs_by_currency"] == {"EUR": "3.00", "USD": "4.00"}
    assert p["totals_by_currency"] == {"EUR": "3.00", "USD": "4.00"}


def test_unallocated_cost_apart_or_spread():
    prod = make_cluster()
    make_namespace(prod, "a", "A")
    make_namespace(prod, "b", "B")
    make_rate(hourly_rate="2.00")
    make_usage(make_device(prod), "a", utc(2026, 3, 6), hours=3)     # A: 6.00
    make_usage(make_device(prod), "b", utc(2026, 3, 6), hours=1)     # B: 2.00
    make_usage(make_device(prod), "", utc(2026, 3, 6), hours=2)      # unallocated: 4.00
    apart = payload()
    assert team_row(apart, "unallocated")["cost"] == "4.00" and team_row(apart, "A")["cost"] == "6.00"
    spread = payload(shared_idle="spread")
    assert [r["key"] for r in spread["results"]] == ["A", "B"]
    assert team_row(spread, "A")["cost"] == "9.00" and team_row(spread, "B")["cost"] == "3.00"   # 4.00 split 3:1
    assert spread["totals_by_currency"] == apart["totals_by_currency"] == {"USD": "12.00"}


def test_shown_totals_equal_sum_of_shown_lines():
    prod = make_cluster()
    make_rate(hourly_rate="0.015")
    for ns in ("ml1", "ml2", "ml3"):   # each 1/3 h × 0.015 = 0.005; the team's 0.015 shows as 0.02
        make_namespace(prod, ns, "A")
        make_usage(make_device(prod), ns, utc(2026, 3, 7), instance_seconds_per_hour=1200.0)
    row = team_row(payload(), "A")
    assert row["cost"] == "0.02"
    assert [line["cost"] for line in row["lines"]] == ["0.01", "0.01", "0.00"]
    assert sum(Decimal(line["cost"]) for line in row["lines"]) == Decimal(row["cost"])


def test_lines_of_one_team_leave_the_other_rows_and_totals_as_they_are():
    """The page asks for one team's lines; every row and total is that of the full statement."""
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_namespace(prod, "web", "B")
    make_rate(hourly_rate="2.00")
    gpu = make_device(prod)
    make_usage(gpu, "ml", utc(2026, 3, 2), hours=3)       # A: 6.00
    make_usage(gpu, "web", utc(2026, 3, 3), hours=4)      # B: 8.00
    full = payload()
    only_a = statement_payload(statement("2026-03"), "team", None, lines_of={"A"})
    assert only_a["totals_by_currency"] == full["totals_by_currency"] == {"USD": "14.00"}
    assert [len(r["lines"]) for r in only_a["results"]] == [1, 0]
    assert [{**r, "lines": None} for r in only_a["results"]] == [{**r, "lines": None} for r in full["results"]]
    assert team_row(only_a, "A")["lines"] == team_row(full, "A")["lines"]
    assert team_row(full, "B")["cost"] == "8.00"
