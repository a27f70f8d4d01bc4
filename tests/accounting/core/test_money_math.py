"""The pure core: rate look-ups, rounding that keeps sums, month bounds, shared idle, late data."""
from datetime import date, datetime, timezone
from decimal import Decimal as D
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.accounting.core.lines import Cell, Line, build_lines
from apps.accounting.core.shared_idle import spread_shared_idle
from apps.accounting.core.periods import parse_period, period_bounds
from apps.accounting.core.ratecard import RateCard, RateEntry
from apps.accounting.core.rounding import apportion, present, round_to_total
from apps.accounting.ledger.late_data import delta_cells

H100 = "NVIDIA H100 80GB HBM3"


def entry(rate, day, profile="", price_class="on_demand", currency="USD", model=H100):
    return RateEntry(model, profile, price_class, D(rate), currency, day)


def cell(ns, team, day, gpu_s, mig_s=0.0, profile="", price_class="on_demand", cluster_id=1):
    return Cell(cluster_id, "prod", ns, team, H100, profile, day, gpu_s, gpu_s / 2, 0.0, mig_s, price_class)


def test_rate_in_force_from_its_day_on():
    card = RateCard([entry("2.00", date(2026, 1, 1)), entry("3.00", date(2026, 3, 16))])
    assert card.lookup(H100, "", "on_demand", date(2025, 12, 31)) is None
    assert card.lookup(H100, "", "on_demand", date(2026, 3, 15))[0].hourly_rate == D("2.00")
    assert card.lookup(H100, "", "on_demand", date(2026, 3, 16))[0].hourly_rate == D("3.00")
    assert card.lookup(H100, "", "spot", date(2026, 3, 16)) is None  # no fallback across price classes


def test_mid_month_rate_change_gives_two_lines():
    card = RateCard([entry("2.00", date(2026, 1, 1)), entry("3.00", date(2026, 3, 16))])
    lines = build_lines([cell("ml", "A", date(2026, 3, 15), 36000.0), cell("ml", "A", date(2026, 3, 16), 18000.0)],
                        card)
    # 10 h × 2.00 + 5 h × 3.00
    assert [(line.hourly_rate, line.cost) for line in lines] == [(D("2.00"), D("20")), (D("3.00"), D("15"))]


def test_mig_profile_rate_per_instance_hour_else_parent_rate_per_gpu_hour():
    card = RateCard([entry("2.00", date(2026, 1, 1)), entry("0.50", date(2026, 1, 1), profile="1g.10gb")])
    own = cell("ml", "A", date(2026, 3, 1), 14 * 3600 / 7, mig_s=14 * 3600.0, profile="1g.10gb")
    parent = cell("ml", "A", date(2026, 3, 1), 7 * 3600 * 3 / 7, mig_s=7 * 3600.0, profile="3g.40gb")
    by_profile = {line.mig_profile: line for line in build_lines([own, parent], card)}
    # 14 instance-hours × 0.50 = 7.00 ; 7 instance-hours × 3/7 = 3 GPU-hours × 2.00 = 6.00
    assert present(by_profile["1g.10gb"].cost, "USD") == "7.00"
    assert by_profile["1g.10gb"].rate_basis == "mig_profile"
    assert present(by_profile["3g.40gb"].cost, "USD") == "6.00"
    assert by_profile["3g.40gb"].rate_basis == "gpu_model"


def test_no_rate_is_unpriced_not_zero():
    [line] = build_lines([cell("ml", "A", date(2026, 3, 1), 3600.0)], RateCard([]))
    assert line.cost is None and not line.priced and line.allocated_gpu_seconds == D("3600.0")


def test_round_to_total_keeps_the_sum():
    shown = round_to_total([D("1.005"), D("1.005"), D("1.005")], "USD")
    assert sum(shown) == D("3.02")  # round(3.015) half-up
    assert shown == [D("1.01"), D("1.01"), D("1.00")]
    assert present(D("2.345"), "USD") == "2.35" and present(D("-2.345"), "USD") == "-2.35"


def test_apportion_splits_a_total_exactly_in_the_currencys_unit():
    assert apportion(D("3.21"), [D("2.142857"), D("1.071428")], "USD") == [D("2.14"), D("1.07")]
    assert apportion(D("1.00"), [D("0.333333")] * 3, "USD") == [D("0.34"), D("0.33"), D("0.33")]
    assert apportion(D("-0.90"), [D("-0.45"), D("-0.45")], "USD") == [D("-0.45"), D("-0.45")]
    # a target under the floors takes a cent back from the amount that lost least (the last of equals)
    assert apportion(D("0.99"), [D("0.50"), D("0.50")], "USD") == [D("0.50"), D("0.49")]
    assert apportion(D("0.05"), [D(0), D(0)], "USD") == [D("0.03"), D("0.02")]
    assert apportion(D("1.00"), [], "USD") == []
    # yen have no minor unit: 1000 yen over 333.33 + 666.67
    assert apportion(D("1000"), [D("333.33"), D("666.67")], "JPY") == [D("333"), D("667")]


def test_month_in_a_non_utc_zone():
    start, end = period_bounds(parse_period("2026-03"), ZoneInfo("America/New_York"))
    assert start.astimezone(timezone.utc) == datetime(2026, 3, 1, 5, tzinfo=timezone.utc)   # EST
    assert end.astimezone(timezone.utc) == datetime(2026, 4, 1, 4, tzinfo=timezone.utc)     # EDT
    with pytest.raises(ValueError):
        parse_period("2026-13")


def test_shared_idle_spread_in_proportion_to_allocated_cost():
    usage_a = Line("usage", "A", "prod", "a", H100, "", "on_demand", "gpu_model", D("2"), "USD",
                   billed_seconds=D(3 * 3600))   # 6.00
    usage_b = Line("usage", "B", "prod", "b", H100, "", "on_demand", "gpu_model", D("2"), "USD",
                   billed_seconds=D(1 * 3600))   # 2.00
    idle = Line("unallocated", "", "prod", "", H100, "", "on_demand", "gpu_model", D("2"), "USD",
                billed_seconds=D(2 * 3600))      # 4.00 shared 3:1
    spread = {(line.kind, line.team): line.cost for line in spread_shared_idle([usage_a, usage_b, idle])}
    assert spread[("shared_idle", "A")] == D("3") and spread[("shared_idle", "B")] == D("1")
    assert ("unallocated", "") not in spread


def test_late_data_is_the_difference_and_keeps_the_frozen_team():
    frozen = [cell("ml", "A", date(2026, 3, 1), 3600.0)]
    live = [cell("ml", "B", date(2026, 3, 1), 5400.0), cell("new", "C", date(2026, 3, 2), 1800.0)]
    delta = {(c.namespace, c.team): c.gpu_seconds for c in delta_cells(live, frozen)}
    assert delta == {("ml", "A"): 1800.0, ("new", "C"): 1800.0}
    assert delta_cells(frozen, frozen) == []


def test_a_day_split_by_a_relabel_is_measured_team_by_team():
    """15 March: alpha until 10:00 (10 h), beta after (14 h), frozen at the close."""
    day = date(2026, 3, 15)
    frozen = [cell("ml", "alpha", day, 10 * 3600.0), cell("ml", "beta", day, 14 * 3600.0)]
    assert delta_cells(frozen, frozen) == []
    late = [cell("ml", "alpha", day, 10 * 3600.0), cell("ml", "beta", day, 15 * 3600.0)]   # 1 h more of beta
    assert {(c.team, c.gpu_seconds) for c in delta_cells(late, frozen)} == {("beta", 3600.0)}
    # the day re-read under one other team is no correction; more hours go to the frozen team with
    # the most hours that day (docs/accounting.md, "Late data for a closed month")
    moved = [cell("ml", "omega", day, 24 * 3600.0)]
    assert delta_cells(moved, frozen) == []
    moved_late = [cell("ml", "omega", day, 25 * 3600.0)]
    assert {(c.team, c.gpu_seconds) for c in delta_cells(moved_late, frozen)} == {("beta", 3600.0)}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.decimals(min_value=-1000, max_value=1000, places=6), min_size=1, max_size=30),
       st.sampled_from([("USD", D("0.01")), ("JPY", D(1)), ("KWD", D("0.001"))]))
def test_round_to_total_property(amounts, currency_unit):
    """In every currency's own unit: the shown amounts sum to the shown total, each within a unit."""
    currency, unit = currency_unit
    shown = round_to_total(amounts, currency)
    assert sum(shown) == D(present(sum(amounts), currency))
    assert all(abs(s - a) < unit and s == s.quantize(unit) for s, a in zip(shown, amounts))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.decimals(min_value=-1000, max_value=1000, places=6), min_size=1, max_size=30),
       st.sampled_from([("USD", D("0.01")), ("JPY", D(1)), ("KWD", D("0.001"))]), st.integers(min_value=-1, max_value=1))
def test_apportion_property(amounts, currency_unit, units_off):
    """Whatever the target (the rounded total, or a unit off it), the parts sum to it exactly in
    the currency's unit and each stays within two units of its exact amount."""
    currency, unit = currency_unit
    target = D(present(sum(amounts), currency)) + units_off * unit
    shown = apportion(target, amounts, currency)
    assert sum(shown) == target
    assert all(abs(s - a) < 2 * unit and s == s.quantize(unit) for s, a in zip(shown, amounts))


def test_periods_outside_2000_to_2100_are_refused():
    assert parse_period("2000-01") == "2000-01" and parse_period("2100-12") == "2100-12"
    for bad in ("1999-12", "2101-01", "9999-12", "0000-01"):
        with pytest.raises(ValueError, match=f"period='{bad}' is out of range: the portal accepts years 2000-2100"):
            parse_period(bad)
        with pytest.raises(ValueError, match="out of range"):
            period_bounds(bad, ZoneInfo("UTC"))


def test_one_rounding_for_five_thousand_half_cent_namespaces():
    """5,000 namespaces of 50 teams at 0.005 USD each: 25.00 exactly. Rounded on their own they
    would show 50.00; rounded once, every team shows its 0.50 (100 × 0.005) and the namespaces
    add up to 25.00, each at 0.00 or 0.01, 50 of each per team."""
    from apps.accounting.core.rounding import shown_amounts
    lines = [Line(kind="usage", team=f"t{i // 100:02d}", cluster="prod", namespace=f"ns{i:04d}", gpu_model=H100,
                  mig_profile="", price_class="on_demand", rate_basis="gpu_model", hourly_rate=D("0.018"),
                  currency="USD", billed_seconds=D(1000)) for i in range(5000)]
    assert lines[0].cost == D("0.005")
    shown = shown_amounts(lines)
    assert sum(shown) == D("25.00") and set(shown) == {D("0.00"), D("0.01")}
    per_team = {}
    for line, amount in zip(lines, shown):
        per_team[line.team] = per_team.get(line.team, D(0)) + amount
    assert set(per_team.values()) == {D("0.50")}


def test_one_rounding_keeps_each_team_and_namespace_within_a_unit_of_exact():
    from apps.accounting.core.rounding import shown_amounts
    costs = {("A", "a1"): "1.004", ("A", "a2"): "0.333", ("B", "b1"): "0.667",
             ("B", "b2"): "-0.251", ("", ""): "4.445"}
    lines = [Line(kind="usage" if team else "unallocated", team=team, cluster="prod", namespace=ns, gpu_model=H100,
                  mig_profile="", price_class="", rate_basis="", hourly_rate=None, currency="USD",
                  fixed_cost=D(c)) for (team, ns), c in costs.items()]
    shown = shown_amounts(lines)
    # 1.004 + 0.333 + 0.667 - 0.251 + 4.445 = 6.198 -> 6.20; teams "" 4.445, A 1.337, B 0.416:
    # floors 4.44 + 1.33 + 0.41 = 6.18, the two missing cents to A (0.007) and B (0.006).
    # A's 1.34 over 1.004 and 0.333: floors 1.00 + 0.33, the cent to a1 (0.004 > 0.003);
    # B's 0.42 over 0.667 and -0.251: floors 0.66 - 0.26 = 0.40, a cent to each.
    assert sum(shown) == D("6.20")
    assert dict(zip([line.namespace for line in lines], shown)) == {
        "a1": D("1.01"), "a2": D("0.33"), "b1": D("0.67"), "b2": D("-0.25"), "": D("4.44")}


def test_rounding_worked_example_of_the_chargeback_docs():
    """docs/chargeback.md, "Rounding": ml 0.005, nb 0.005 (team A), web 7.035 (B), unallocated
    2.345: 9.39 in all; teams 2.35, 0.01, 7.03; ml 0.01, nb 0.00."""
    from apps.accounting.core.rounding import shown_amounts
    spec = [("A", "ml", "0.005"), ("A", "nb", "0.005"), ("B", "web", "7.035"), ("", "", "2.345")]
    lines = [Line(kind="usage" if team else "unallocated", team=team, cluster="prod", namespace=ns, gpu_model=H100,
                  mig_profile="", price_class="", rate_basis="", hourly_rate=None, currency="USD", fixed_cost=D(c))
             for team, ns, c in spec]
    assert shown_amounts(lines) == [D("0.01"), D("0.00"), D("7.03"), D("2.35")]
    assert round_to_total([D(c) for *_, c in spec], "USD") != shown_amounts(lines)   # the old per-line rounding
