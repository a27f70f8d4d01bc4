"""The oracle against numbers worked out on paper for the tiny cluster."""
import pytest

from apps.simulator.expected import expected_figures

from .conftest import HOUR_START, at, sliced_scenario, tiny_scenario

approx = pytest.approx


def test_capacity_counts_every_device_sample_times_fraction():
    e = expected_figures(tiny_scenario())
    # H100: 120 samples x 60 s; the A100 in MIG mode is a whole GPU: its 1g.10gb 120 x 60 s x 1/7,
    # and the six slices no instance occupies 120 x 60 s x 6/7 (docs/accounting.md, "When devices change")
    assert e.capacity_gpu_seconds == approx(7200 + 7200)
    assert e.capacity_by_model == approx({"NVIDIA H100 80GB HBM3": 7200, "NVIDIA A100-SXM4-80GB": 7200})


def test_allocated_idle_and_unallocated_per_namespace():
    e = expected_figures(tiny_scenario())
    assert e.allocated_gpu_seconds == approx({"ml-research": 1800, "notebooks": 1800 / 7})
    assert e.unallocated_gpu_seconds == approx(7200 + 7200 - 1800 - 1800 / 7)
    assert e.idle_gpu_seconds == approx({"notebooks": 1800 / 7})  # the busy trainer is never idle
    assert e.allocated_by_model == approx({"NVIDIA H100 80GB HBM3": 1800, "NVIDIA A100-SXM4-80GB": 1800 / 7})


def test_mig_seconds_are_raw_interval_per_sample():
    e = expected_figures(tiny_scenario())
    assert e.mig_seconds == {"notebooks": {"1g.10gb": approx(1800)}}


def test_used_follows_busy_and_idle_patterns():
    e = expected_figures(tiny_scenario())
    assert 0.85 * 1800 <= e.used_gpu_seconds["ml-research"] <= 0.98 * 1800
    assert e.used_gpu_seconds["notebooks"] <= 0.03 * 1800 / 7


def test_idle_pods_and_longest_idle_run():
    e = expected_figures(tiny_scenario())
    assert e.idle_by_pod == approx({("notebooks", "jupyter-erin"): 1800 / 7})
    assert e.longest_idle_run_seconds[("notebooks", "jupyter-erin")] == 1800
    assert e.longest_idle_run_seconds[("ml-research", "trainer-0")] == 0


def test_hourly_buckets_are_half_open():
    e = expected_figures(tiny_scenario())
    assert e.allocated_by_ns_hour == approx({
        ("ml-research", HOUR_START): 1800,
        ("notebooks", HOUR_START): 600 / 7,  # samples 50..59
        ("notebooks", HOUR_START + 3600): 1200 / 7,  # samples 60..79
    })


def test_queued_demand_of_pending_pods():
    e = expected_figures(tiny_scenario())
    # 10 samples x 60 s x 2 GPUs; 10 samples x 60 s x 1 x 1/7 for a pending 1g.10gb
    assert e.queued_gpu_seconds == approx({"ml-research": 1200, "notebooks": 600 / 7})


def test_window_restriction():
    e = expected_figures(tiny_scenario()).within(at(0), at(60))
    assert e.allocated_gpu_seconds == approx({"ml-research": 1800, "notebooks": 600 / 7})
    assert e.capacity_gpu_seconds == approx(3600 + 3600)
    assert e.longest_idle_run_seconds[("notebooks", "jupyter-erin")] == 600
    assert expected_figures(tiny_scenario()).within(at(59), at(60)).allocated_gpu_seconds == approx(
        {"notebooks": 60 / 7})


def test_teams_fall_back_to_unassigned():
    e = expected_figures(tiny_scenario())
    assert e.allocated_by_team() == approx({"research": 1800, "unassigned": 1800 / 7})


def test_time_sliced_gpu_splits_each_sample_among_present_pods():
    e = expected_figures(sliced_scenario())
    # nb-a: 10 alone (600) + 10 shared (300); job-b: 10 shared (300) + 10 alone (600)
    assert e.allocated_gpu_seconds == approx({"notebooks": 900, "batch": 900})
    assert e.capacity_gpu_seconds == approx(7200)
    assert e.unallocated_gpu_seconds == approx(7200 - 1800)
