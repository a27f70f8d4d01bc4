"""A tiny hand-built cluster whose figures can be worked out on paper."""
import pytest

from apps.simulator.scenario import PendingPod, Scenario, SimDevice, SimPod

HOUR_START = 1_699_999_200  # 2023-11-14 22:00 UTC, a whole hour
INTERVAL_SECONDS = 60
SAMPLES = 120  # two hours

WHOLE = SimDevice("node-a", 0, "GPU-aaaaaaaa-0000-0000-0000-000000000001", "NVIDIA H100 80GB HBM3", "00000000:0B:00.0")
MIG = SimDevice("node-b", 0, "GPU-bbbbbbbb-0000-0000-0000-000000000002", "NVIDIA A100-SXM4-80GB",
                "00000000:07:00.0", mig_profile="1g.10gb", mig_instance_id="9")


def at(k: int) -> int:
    return HOUR_START + k * INTERVAL_SECONDS


def tiny_scenario(spelling="plain", hostname_label="Hostname") -> Scenario:
    """Whole H100 busy for 30 min from the start; a 1g.10gb slice held idle for 30 min
    across the hour boundary (10 samples in hour one, 20 in hour two); pending demand."""
    return Scenario(
        name="tiny", start=HOUR_START, end=at(SAMPLES), interval_seconds=INTERVAL_SECONDS,
        spelling=spelling, hostname_label=hostname_label, devices=[WHOLE, MIG],
        pods=[SimPod("ml-research", "trainer-0", "trainer", [WHOLE.key], at(0), at(30), "busy"),
              SimPod("notebooks", "jupyter-erin", "notebook", [MIG.key], at(50), at(80), "idle")],
        pending=[PendingPod("ml-research", "trainer-1", "trainer", "nvidia_com_gpu", 2, at(0), at(10)),
                 PendingPod("notebooks", "jupyter-frank", "notebook", "nvidia_com_mig_1g_10gb", 1, at(0), at(10))],
        namespace_teams={"ml-research": "research", "notebooks": None},
        quotas={"ml-research": 4}, seed=7)


def sliced_scenario(spelling="plain") -> Scenario:
    """One time-sliced H100: pod a alone for 10 samples, shared with b for 10, b alone for 10."""
    return Scenario(
        name="sliced", start=HOUR_START, end=at(SAMPLES), interval_seconds=INTERVAL_SECONDS,
        spelling=spelling, devices=[WHOLE],
        pods=[SimPod("notebooks", "nb-a", "notebook", [WHOLE.key], at(0), at(20), "busy"),
              SimPod("batch", "job-b", "worker", [WHOLE.key], at(10), at(30), "busy")],
        namespace_teams={"notebooks": "research", "batch": "platform"}, time_sliced={WHOLE.key}, seed=3)


@pytest.fixture
def tiny():
    return tiny_scenario()
