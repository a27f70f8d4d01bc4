"""Per-device ground truth, sample by sample: who holds the device and how busy it is.

Both `emit` (the series) and `expected` (the oracle) read this module, never each other,
so the expected figures do not depend on how the series are spelled or parsed.
Utilization values are already quantised to what the exporter reports (integer percent on
whole GPUs, 4 decimals of GR_ENGINE_ACTIVE on MIG), so both sides see identical numbers.
"""
from __future__ import annotations

import bisect
import functools
import random
from dataclasses import dataclass
from typing import Iterator

from .scenario import Scenario, SimDevice, SimPod

_BURST_SAMPLES = (6, 30)  # length range of a bursty pod's busy or idle stretch


@dataclass(frozen=True)
class Segment:
    """Consecutive samples [k0, k1) of one device with the same set of holding pods."""
    k0: int
    k1: int
    pods: tuple[SimPod, ...]


def pods_by_device(scenario: Scenario) -> dict:
    out: dict = {}
    for pod in scenario.pods:
        for key in pod.devices:
            out.setdefault(key, []).append(pod)
    return out


def segments(scenario: Scenario, device_pods: list[SimPod]) -> list[Segment]:
    """Split the device's timeline wherever the set of holding pods changes."""
    n = len(scenario.timestamps)

    def idx(ts):
        return min(n, max(0, -(-(ts - scenario.start) // scenario.interval_seconds)))

    cuts = {0, n}
    spans = []
    for pod in device_pods:
        k0, k1 = idx(pod.start), idx(pod.end)
        if k1 > k0:
            spans.append((k0, k1, pod))
            cuts.update((k0, k1))
    edges = sorted(cuts)
    out = []
    for k0, k1 in zip(edges, edges[1:]):
        holders = tuple(sorted((p for a, b, p in spans if a <= k0 and k1 <= b), key=lambda p: (p.start, p.uid)))
        if out and out[-1].pods == holders:
            out[-1] = Segment(out[-1].k0, k1, holders)
        else:
            out.append(Segment(k0, k1, holders))
    return out


@functools.lru_cache(maxsize=4096)
def _burst_toggles(pod_uid: str, pod_samples: int) -> list[int]:
    """Sample offsets where a bursty pod flips between busy and idle (starts busy)."""
    stretch_rng = random.Random(pod_uid)
    toggles, k = [], 0
    while k < pod_samples:
        k += stretch_rng.randrange(*_BURST_SAMPLES)
        toggles.append(k)
    return toggles


def _pattern_busy(pattern: str, pod: SimPod, k_in_pod: int, pod_samples: int, rng: random.Random) -> float:
    """Utilization ratio drawn for one sample of a pod with the given pattern."""
    if pattern == "busy":
        return rng.uniform(0.85, 0.98)
    if pattern == "idle":
        return rng.uniform(0.0, 0.03)
    if pattern == "light":   # a small model serving on a big GPU: busy enough not to count idle
        return rng.uniform(0.06, 0.11)
    if pattern == "bursty":
        on = bisect.bisect_right(_burst_toggles(pod.uid, pod_samples), k_in_pod) % 2 == 0
        return rng.uniform(0.85, 0.98) if on else rng.uniform(0.0, 0.03)
    # mixed: a working third, a half-busy third, then forgotten
    third = k_in_pod * 3 // max(1, pod_samples)
    return (rng.uniform(0.85, 0.98), rng.uniform(0.3, 0.6), rng.uniform(0.0, 0.03))[min(third, 2)]


def utilization(scenario: Scenario, device: SimDevice, device_segments: list[Segment]) -> list[float]:
    """Utilization ratio 0-1 per sample index, quantised as the exporter reports it."""
    rng = random.Random(f"{scenario.seed}|util|{device.uuid}|{device.mig_instance_id or ''}")
    interval = scenario.interval_seconds
    values: list[float] = []
    for seg in device_segments:
        for k in range(seg.k0, seg.k1):
            if not seg.pods:
                ratio = rng.uniform(0.0, 0.01)
            else:
                # A shared (time-sliced) GPU is as busy as its busiest tenant.
                ratio = 0.0
                for pod in seg.pods:
                    k_in_pod = k - (pod.start - scenario.start) // interval
                    pod_samples = (pod.end - pod.start) // interval
                    ratio = max(ratio, _pattern_busy(pod.pattern, pod, k_in_pod, pod_samples, rng))
            values.append(round(ratio * 100) / 100 if not device.is_mig else round(ratio, 4))
    return values


@dataclass
class DeviceTruth:
    device: SimDevice
    segments: list[Segment]
    utilization: list[float]  # ratio per sample index


def iter_device_truth(scenario: Scenario) -> Iterator[DeviceTruth]:
    by_device = pods_by_device(scenario)
    for device in scenario.devices:
        segs = segments(scenario, by_device.get(device.key, []))
        yield DeviceTruth(device, segs, utilization(scenario, device, segs))


# ---------------------------------------------------------------- GPUs HAMi shares

MEMORY_MIB = {"NVIDIA H100 80GB HBM3": 81559, "NVIDIA A100-SXM4-80GB": 81920, "NVIDIA A30": 24576,
              "NVIDIA L4": 23034}


def memory_mib(model: str) -> int:
    """A board's memory as the driver (and so HAMi) reports it."""
    return MEMORY_MIB.get(model, 81920)


def hami_shares(scenario: Scenario, device: SimDevice, pods) -> dict[str, float]:
    """Pod uid -> its share of the GPU at an instant the pods hold it: max(cores ÷ 100, memory ÷ the
    board's), all scaled down in proportion when they add up to more than one GPU
    (docs/accounting.md, "HAMi fractional GPUs")."""
    board = memory_mib(device.model)
    shares = {}
    for pod in pods:
        cores, mem = scenario.hami_shares[pod.uid]
        shares[pod.uid] = min(1.0, max(cores / 100, mem / board))
    total = sum(shares.values())
    if total > 1.0:
        shares = {uid: share / total for uid, share in shares.items()}
    return shares


def hami_utilization(scenario: Scenario, pod: SimPod, k: int) -> float:
    """A HAMi pod's SM utilization at sample k, as a fraction of the whole GPU in whole percents
    (HAMi's monitor): its pattern's busy ratio × the cores it was given."""
    interval = scenario.interval_seconds
    k_in_pod = k - (pod.start - scenario.start) // interval
    pod_samples = (pod.end - pod.start) // interval
    rng = random.Random(f"{scenario.seed}|hami|{pod.uid}|{k}")
    cores = scenario.hami_shares[pod.uid][0]
    return round(_pattern_busy(pod.pattern, pod, k_in_pod, pod_samples, rng) * cores) / 100
