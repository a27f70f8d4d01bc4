"""The one definition of each figure (apps/accounting/core/measures.py), against hand-computed numbers."""
from decimal import Decimal

import pytest

from apps.accounting.core.measures import (IdleHour, IdleStretch, efficiency, gpu_hours, idle_stretches,
                                     longest_idle_seconds, share, shown_efficiency, shown_hours, shown_ratio)

T0 = 1_700_000_000 - (1_700_000_000 % 3600)
H = 3600


# ---------------------------------------------------------------- hours

def test_gpu_hours_are_seconds_over_3600():
    assert gpu_hours(5400) == 1.5
    assert gpu_hours(Decimal("5400.0")) == 1.5
    assert gpu_hours(3600 / 7) == pytest.approx(0.142857142857)   # a 1g.10gb MIG slice for an hour


def test_shown_hours_have_six_decimal_places():
    assert shown_hours(1) == 0.000278              # 1/3600 = 0.000277…
    assert shown_hours(3600 / 7) == 0.142857
    assert shown_hours(Decimal("-7200")) == -2.0   # a negative adjustment stays negative


# ---------------------------------------------------------------- efficiency

def test_efficiency_is_used_over_allocated():
    assert efficiency(2700, 3600) == 0.75
    assert efficiency(0, 3600) == 0.0                        # allocated, never used: 0, not None
    assert efficiency(Decimal("1800"), Decimal("3600")) == 0.5
    assert isinstance(efficiency(Decimal("1"), Decimal("3")), float)


def test_no_allocation_has_no_efficiency():
    assert efficiency(0, 0) is None
    assert efficiency(36, 0) is None                         # used without allocation: still None
    assert efficiency(-1800, -3600) is None                  # an adjustment line that took hours away


def test_shown_efficiency_rounds_to_six_places():
    assert shown_efficiency(1, 3) == 0.333333
    assert shown_efficiency(2, 3) == 0.666667
    assert shown_efficiency(252, 10800) == 0.023333          # 252 s used of 3 GPU-hours
    assert shown_efficiency(5, 0) is None
    assert shown_ratio(None) is None


def test_share_of_a_whole():
    assert share(1, 4) == 0.25
    assert share(3600, 0) is None


# ---------------------------------------------------------------- idle stretches

def test_a_stretch_across_three_hours_starts_in_the_first():
    hours = [
        IdleHour(T0, 0, 1200, 1200, False),           # idle from minute 40
        IdleHour(T0 + H, 3600, 3600, 3600, True),     # idle throughout
        IdleHour(T0 + 2 * H, 600, 0, 600, False),     # idle for the first 10 minutes
    ]
    assert idle_stretches(hours) == [IdleStretch(T0 + 2400, 1200 + 3600 + 600, False)]
    assert longest_idle_seconds(hours) == 5400


def test_a_stretch_reaching_the_last_hour_is_open():
    hours = [IdleHour(T0, 0, 900, 900, False)]
    assert idle_stretches(hours) == [IdleStretch(T0 + 2700, 900, True)]
    hours = [IdleHour(T0, 3600, 3600, 3600, True), IdleHour(T0 + H, 3600, 3600, 3600, True)]
    assert idle_stretches(hours) == [IdleStretch(T0, 7200, True)]


def test_a_missing_hour_breaks_the_stretch():
    hours = [IdleHour(T0, 0, 1800, 1800, False), IdleHour(T0 + 2 * H, 1200, 0, 1200, False)]
    assert idle_stretches(hours) == [IdleStretch(T0 + 1800, 1800, False), IdleStretch(T0 + 2 * H, 1200, False)]
    assert longest_idle_seconds(hours) == 1800


def test_inner_runs_are_placed_at_the_hour_start():
    hours = [IdleHour(T0, 300, 0, 2000, False)]
    assert idle_stretches(hours) == [IdleStretch(T0, 300, False), IdleStretch(T0, 2000, False)]


def test_only_long_stretches_when_asked():
    hours = [IdleHour(T0, 0, 1200, 1200, False), IdleHour(T0 + H, 600, 0, 600, False),
             IdleHour(T0 + 3 * H, 0, 1799, 1799, False)]
    assert idle_stretches(hours, min_seconds=1800) == [IdleStretch(T0 + 2400, 1800, False)]


def test_plain_tuples_read_like_idle_hours():
    rows = [(T0, 0.0, 3300.0, 3300.0, False), (T0 + H, 3600.0, 3600.0, 3600.0, True),
            (T0 + 2 * H, 150.0, 0.0, 150.0, False)]
    assert longest_idle_seconds(rows) == 3300 + 3600 + 150
    assert longest_idle_seconds([]) == 0.0
