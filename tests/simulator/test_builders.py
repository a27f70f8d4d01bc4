"""build_scenario / build_fleet give the shapes the portal's tests rely on, deterministically."""
import time

from apps.simulator.expected import expected_figures
from apps.simulator.builders import build_fleet, build_scenario
from apps.simulator.scenario import default_start


def test_same_seed_same_scenario_different_seed_different():
    a, b = build_scenario(start=1_700_002_800, seed=4), build_scenario(start=1_700_002_800, seed=4)
    assert a.fingerprint() == b.fingerprint()
    assert build_scenario(start=1_700_002_800, seed=5).fingerprint() != a.fingerprint()


def test_default_start_is_a_whole_hour_two_days_back():
    start = build_scenario().start
    assert start % 3600 == 0 and start <= time.time() - 2 * 86400
    assert default_start(now=1_700_003_000) == 1_699_999_200 - 2 * 86400


def test_scenario_has_the_features_reports_need():
    s = build_scenario(time_slicing=True)
    s.validate()
    models = {d.model for d in s.devices}
    assert {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA A30"} <= models
    assert {d.mig_profile for d in s.devices if d.is_mig} >= {"3g.40gb", "2g.20gb", "1g.10gb", "2g.12gb", "1g.6gb"}
    assert all((p.start - s.start) % s.interval_seconds == 0 for p in s.pods)
    names = [(p.namespace, p.name) for p in s.pods]
    moved = [key for key in set(names) if names.count(key) > 1]
    assert any(len({tuple(p.devices) for p in s.pods if (p.namespace, p.name) == key}) > 1 for key in moved)
    assert any(p.pattern == "idle" for p in s.pods)
    assert s.pending and s.time_sliced
    assert None in s.namespace_teams.values()
    e = expected_figures(s)
    assert e.unallocated_gpu_seconds > 0 and sum(e.queued_gpu_seconds.values()) > 0
    assert set(e.allocated_gpu_seconds) == set(s.namespace_teams)


def test_fleet_is_large_and_partly_mig():
    fleet = build_fleet(gpus=200, hours=1, interval_seconds=60, seed=2)
    whole = {d.uuid for d in fleet.devices if not d.is_mig}
    mig_gpus = {d.uuid for d in fleet.devices if d.is_mig}
    assert len(whole) + len(mig_gpus) == 200
    assert 0.05 < len(mig_gpus) / 200 < 0.3
