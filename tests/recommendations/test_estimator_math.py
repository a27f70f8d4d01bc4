"""The estimator's steps, each with numbers worked out by hand (percentile → margin → confidence)."""
from decimal import Decimal

import pytest

from apps.recommendations import estimator as est
from apps.recommendations.estimator import Params, ResourceHistory


def test_percentile_interpolates_between_closest_ranks():
    # [1, 2, 3, 4]: position (n-1)p = 1.5 for P50 -> halfway between 2 and 3.
    assert est.percentile([4, 1, 3, 2], 0.5) == pytest.approx(2.5)
    # P90: position 2.7 -> 3 + 0.7 × (4 - 3) = 3.7; P95: position 2.85 -> 3.85.
    assert est.percentile([1, 2, 3, 4], 0.9) == pytest.approx(3.7)
    assert est.percentile([1, 2, 3, 4], 0.95) == pytest.approx(3.85)
    # exact ranks need no interpolation; one value is every percentile; none gives 0.
    assert est.percentile([0, 1, 2, 3, 4], 0.5) == 2
    assert est.percentile([5], 0.9) == 5
    assert est.percentile([], 0.9) == 0.0
    with pytest.raises(ValueError):
        est.percentile([1], 90)


def test_margin_and_ceiling_ignore_float_noise():
    assert est.with_margin(4.0, 0.15) == pytest.approx(4.6)
    # 20 × 1.15 is 22.999999999999996 in floating point: the target is 23, not 22 or 24.
    assert est.ceil_whole(est.with_margin(20.0, 0.15)) == 23
    assert est.ceil_whole(4.6) == 5
    assert est.ceil_whole(0.0) == 0
    assert est.with_margin(-1.0, 0.15) == 0.0


def test_confidence_widens_bounds_by_days_of_history():
    # two days: upper × (1 + 1/2), lower × (1 - 1/2)
    assert est.confidence_upper(6.9, 2) == pytest.approx(10.35)
    assert est.confidence_lower(4.6, 2) == pytest.approx(2.3)
    # half a day: lower bound gone, upper tripled
    assert est.confidence_lower(4.6, 0.5) == 0.0
    assert est.confidence_upper(4.6, 0.5) == pytest.approx(13.8)
    # 28 days: × 29/28 and × 27/28
    assert est.confidence_upper(4.6, 28) == pytest.approx(4.6 * 29 / 28)
    assert est.confidence_lower(4.6, 28) == pytest.approx(4.6 * 27 / 28)


def test_estimate_two_days_of_two_then_six_gpus():
    hourly = [2.0] * 24 + [6.0] * 24
    e = est.estimate(hourly)
    # P50 at position 23.5: halfway between the last 2 and the first 6 = 4.
    assert (e.hours, e.days) == (48, 2.0)
    assert e.p50 == pytest.approx(4.0)
    assert e.p90 == e.p95 == 6.0
    assert e.target == 7                       # ceil(6 × 1.15 = 6.9)
    assert e.lower_bound == pytest.approx(2.3)   # 4 × 1.15 × (1 - 1/2)
    assert e.upper_bound == pytest.approx(10.35)  # 6 × 1.15 × (1 + 1/2)


def test_estimate_full_window_steady_four_gpus():
    e = est.estimate([4.0] * 672)
    assert e.days == 28
    assert e.target == 5
    assert e.lower_bound == pytest.approx(4.435714, abs=1e-6)
    assert e.upper_bound == 5.0   # 4 × 1.15 × 29/28 = 4.764286, raised to the 5 needed


def test_short_history_twelve_hours():
    e = est.estimate([3.0] * 12)
    assert e.days == 0.5
    assert e.target == 4                        # ceil(3.45)
    assert e.lower_bound == 0.0
    assert e.upper_bound == pytest.approx(10.35)  # 3.45 × 3


def test_never_below_zero_and_empty_history():
    e = est.estimate([])
    assert (e.target, e.lower_bound, e.upper_bound) == (0, 0.0, 0.0)


RATE = (Decimal("2.50"), "EUR")
STEADY = [4.0] * 672   # target 5, bounds 4.4357 .. 5 (4.7643 raised to the 5 needed)


def history(**kw):
    base = dict(resource="requests.nvidia.com/gpu", hourly=STEADY, hard=16.0, used=4.0,
                allocated_gpu_seconds=1000.0, used_gpu_seconds=300.0, quota_hours=672)
    base.update(kw)
    return ResourceHistory(**base)


def test_over_provisioned_when_above_upper_bound_and_inefficient():
    a = est.assess(history(), rate=RATE)
    assert a.verdict == est.OVER
    assert a.efficiency == pytest.approx(0.3)
    assert a.recommended == 5
    assert "above the upper bound 5 (what is needed)" in a.reason and "efficiency is 30%" in a.reason
    # |16 - 5| × 730 h × 2.50 = 20075.00
    assert a.monthly_money_at_stake == Decimal("20075.00")
    assert a.currency == "EUR"


def test_high_efficiency_keeps_a_generous_quota_ok():
    a = est.assess(history(used_gpu_seconds=800.0), rate=RATE)
    assert a.verdict == est.OK
    assert "at least 50%" in a.reason
    assert a.recommended == 16
    assert a.monthly_money_at_stake == Decimal("0.00")


def test_configurable_efficiency_threshold():
    a = est.assess(history(used_gpu_seconds=800.0), Params(low_efficiency=0.9))
    assert a.verdict == est.OVER


def test_nothing_allocated_counts_as_low_efficiency():
    a = est.assess(history(hourly=[0.0] * 48, allocated_gpu_seconds=0.0, used_gpu_seconds=0.0, hard=8.0))
    assert a.verdict == est.OVER
    assert a.recommended == 0
    assert "nothing was allocated" in a.reason


def test_queued_demand_turns_the_verdict_to_under_provisioned():
    calm = est.assess(history(hard=5.0, used_gpu_seconds=900.0), rate=RATE)
    assert calm.verdict == est.OK
    queued = est.assess(history(hard=5.0, used_gpu_seconds=900.0, queued_gpu_hours=3.0), rate=RATE)
    assert queued.verdict == est.UNDER
    assert "pods waited 3 GPU-hours in Pending" in queued.reason
    # max(target 5, ceil(5 × 1.15 = 5.75) = 6) = 6; |5 - 6| × 730 × 2.50 = 1825.00
    assert queued.recommended == 6
    assert queued.monthly_money_at_stake == Decimal("1825.00")


def test_used_at_hard_for_a_tenth_of_the_time_is_under_provisioned():
    # 68 of 672 hours at the hard limit = 10.1 % >= 10 %; 67 hours = 9.97 % is not.
    assert est.assess(history(hard=5.0, used_gpu_seconds=900.0, seconds_at_hard=68 * 3600.0)).verdict == est.UNDER
    assert est.assess(history(hard=5.0, used_gpu_seconds=900.0, seconds_at_hard=67 * 3600.0)).verdict == est.OK


def test_no_quota_suggests_the_target_and_has_no_money_at_stake():
    a = est.assess(history(hard=None, quota_hours=0, queued_gpu_hours=2.0), rate=RATE)
    assert a.verdict == est.NO_QUOTA
    assert a.recommended == 5
    assert a.monthly_money_at_stake is None
    assert "no quota limits requests.nvidia.com/gpu" in a.reason


def test_without_a_rate_money_is_unpriced():
    a = est.assess(history(), rate=None)
    assert a.monthly_money_at_stake is None and a.currency is None


def test_row_totals_and_worst_verdict():
    over = est.assess(history(), rate=RATE)
    ok = est.assess(history(used_gpu_seconds=800.0), rate=RATE)
    assert est.total_money([over, ok]) == (Decimal("20075.00"), "EUR")
    assert est.total_money([over, est.assess(history())]) == (None, None)
    assert est.worst_verdict([est.OK, est.OVER, est.NO_QUOTA]) == est.OVER
    assert est.worst_verdict([est.OK, est.UNDER, est.OVER]) == est.UNDER


def test_split_over_flavors_by_current_quota():
    assert est.split_by_weight(7, [4, 4]) == [4, 3]
    assert est.split_by_weight(10, [8, 2]) == [8, 2]
    assert est.split_by_weight(5, [0, 0]) == [3, 2]
    assert est.split_by_weight(0, [3]) == [0]


def test_a_zero_quota_with_queued_pods_is_raised_by_at_least_one():
    a = est.assess(history(hourly=[0.0] * 48, hard=0.0, allocated_gpu_seconds=0.0, used_gpu_seconds=0.0,
                           queued_gpu_hours=4.0), rate=RATE)
    assert (a.verdict, a.estimate.target, a.recommended) == (est.UNDER, 0, 1)
    assert a.reason.endswith("raise it to 1")
    assert a.monthly_money_at_stake == Decimal("1825.00")  # 1 × 730 × 2.50


def test_only_quota_bound_queueing_is_under_provisioning():
    spare = est.assess(history(hard=5.0, used_gpu_seconds=900.0, queued_gpu_hours=3.0,
                               quota_bound_queued_gpu_hours=0.0), rate=RATE)
    assert spare.verdict == est.OK
    assert "3 GPU-hours queued with quota to spare" in spare.reason
    full = est.assess(history(hard=5.0, used_gpu_seconds=900.0, queued_gpu_hours=3.0,
                              quota_bound_queued_gpu_hours=1.0), rate=RATE)
    assert full.verdict == est.UNDER and "pods waited 1 GPU-hours in Pending with the quota full" in full.reason


def test_the_bounds_always_hold_what_is_needed():
    """A quota is whole GPUs: steady 4 GPUs need 5 (⌈4 × 1.15⌉), so the upper bound P95 × 1.15
    × 29/28 = 4.76 is raised to 5; a namespace that used half a GPU for one hour of 28 days
    needs 1 (used at all), and its bounds 0.00 – 0.00 become 0.00 – 1.00. "Needed 5" beside
    "bounds 4.44 – 4.76", or "Needed 1" beside "0.00 – 0.00", read as a contradiction."""
    steady = est.estimate([4.0] * 672)
    assert (steady.target, steady.upper_bound) == (5, 5.0)
    assert steady.lower_bound == pytest.approx(4.435714, abs=1e-6)
    light = est.estimate([0.0] * 671 + [0.5])
    assert (light.target, light.lower_bound, light.upper_bound) == (1, 0.0, 1.0)


def test_a_quota_equal_to_what_is_needed_is_kept_not_lowered_to_itself():
    """Quota 5 on steady 4 GPUs at 30 % efficiency was "above the upper bound 4.76 … lower it
    to 5": a verdict to lower a quota to the value it already has, freeing nothing."""
    a = est.assess(history(hard=5.0), rate=RATE)
    assert a.verdict == est.OK
    assert a.recommended == 5
    assert a.monthly_money_freed == Decimal("0.00")
    assert "keep 5" in a.reason
