"""The oracle: the usage figures (docs/figures.md) computed sample by sample from the
scenario's ground truth.

Deliberately naive (one Python loop over every device sample) so that it is easy to
trust; it never reads the emitted series, so a bug in emission or in ingest shows up as a
mismatch instead of cancelling out.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from apps.accounting.core.measures import efficiency

from .scenario import Scenario, resource_fraction
from .truth import hami_shares, hami_utilization, iter_device_truth

HOUR_SECONDS = 3600


@dataclass
class Expected:
    interval_seconds: int
    idle_threshold: float
    window_start: int
    window_end: int
    capacity_gpu_seconds: float = 0.0
    unallocated_gpu_seconds: float = 0.0
    allocated_gpu_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    used_gpu_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    idle_gpu_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    mig_seconds: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))
    allocated_by_model: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    capacity_by_model: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    unallocated_by_model: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    idle_by_pod: dict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    longest_idle_run_seconds: dict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    allocated_by_ns_hour: dict[tuple[str, int], float] = field(default_factory=lambda: defaultdict(float))
    queued_gpu_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    namespace_team: dict[str, str | None] = field(default_factory=dict)
    _scenario: Scenario | None = field(default=None, repr=False, compare=False)

    @property
    def allocated_total_gpu_seconds(self) -> float:
        return sum(self.allocated_gpu_seconds.values())

    def efficiency(self, namespace: str) -> float | None:
        return efficiency(self.used_gpu_seconds.get(namespace, 0.0), self.allocated_gpu_seconds.get(namespace, 0.0))

    def team_of(self, namespace: str) -> str:
        return self.namespace_team.get(namespace) or "unassigned"

    def allocated_by_team(self) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for ns, gpu_seconds in self.allocated_gpu_seconds.items():
            out[self.team_of(ns)] += gpu_seconds
        return dict(out)

    def within(self, start: int, end: int) -> "Expected":
        """The same figures for samples with start <= timestamp < end."""
        return expected_figures(self._scenario, self.idle_threshold, window=(start, end))

    def as_plain_dicts(self) -> "Expected":
        """Drop the defaultdict behaviour so a missing key fails loudly in tests."""
        for name in ("allocated_gpu_seconds", "used_gpu_seconds", "idle_gpu_seconds", "allocated_by_model",
                     "capacity_by_model", "unallocated_by_model", "idle_by_pod", "longest_idle_run_seconds",
                     "allocated_by_ns_hour", "queued_gpu_seconds"):
            setattr(self, name, dict(getattr(self, name)))
        self.mig_seconds = {ns: dict(v) for ns, v in self.mig_seconds.items()}
        return self


def expected_figures(scenario: Scenario, idle_threshold: float = 0.05,
                     window: tuple[int, int] | None = None) -> Expected:
    window_start, window_end = window if window else (scenario.start, scenario.end)
    interval = scenario.interval_seconds
    timestamps = scenario.timestamps
    e = Expected(interval, idle_threshold, window_start, window_end, _scenario=scenario)
    e.namespace_team = dict(scenario.namespace_teams)

    hami_devices = scenario.hami_devices
    for truth in iter_device_truth(scenario):
        device = truth.device
        if device.key in hami_devices:
            _hami_device(e, scenario, truth, window_start, window_end)
            continue
        fraction = device.gpu_fraction
        sample_gpu_seconds = interval * fraction
        # Idle runs per pod on this device, reset by any busy sample. Keyed by uid so a pod
        # re-created under the same name starts a new run; kept across segments because on a
        # time-sliced GPU a neighbour arriving does not interrupt this pod's holding.
        run_samples: dict[str, int] = defaultdict(int)
        for seg in truth.segments:
            for k in range(seg.k0, seg.k1):
                ts = timestamps[k]
                if not window_start <= ts < window_end:
                    continue
                e.capacity_gpu_seconds += sample_gpu_seconds
                e.capacity_by_model[device.model] += sample_gpu_seconds
                if not seg.pods:
                    e.unallocated_gpu_seconds += sample_gpu_seconds
                    e.unallocated_by_model[device.model] += sample_gpu_seconds
                    continue
                utilization = truth.utilization[k]
                idle = utilization < idle_threshold
                # A time-sliced GPU's sample is split equally among the pods present.
                share = 1.0 / len(seg.pods)
                hour_start = ts - ts % HOUR_SECONDS
                for pod in seg.pods:
                    ns, pod_key = pod.namespace, (pod.namespace, pod.name)
                    gpu_seconds = sample_gpu_seconds * share
                    e.allocated_gpu_seconds[ns] += gpu_seconds
                    e.used_gpu_seconds[ns] += gpu_seconds * utilization
                    e.allocated_by_model[device.model] += gpu_seconds
                    e.allocated_by_ns_hour[(ns, hour_start)] += gpu_seconds
                    if device.is_mig:
                        e.mig_seconds[ns][device.mig_profile] += interval * share
                    if idle:
                        e.idle_gpu_seconds[ns] += gpu_seconds
                        e.idle_by_pod[pod_key] += gpu_seconds
                        run_samples[pod.uid] += 1
                        e.longest_idle_run_seconds[pod_key] = max(
                            e.longest_idle_run_seconds[pod_key], run_samples[pod.uid] * interval)
                    else:
                        run_samples[pod.uid] = 0
                        e.longest_idle_run_seconds.setdefault(pod_key, 0.0)

    # A GPU in MIG mode is a whole GPU of capacity: the slices none of its instances occupies
    # are unallocated (docs/accounting.md, "When devices change").
    boards: dict[str, list] = defaultdict(list)
    for device in scenario.devices:
        if device.is_mig:
            boards[device.uuid].append(device)
    for instances in boards.values():
        free = 1.0 - sum(d.gpu_fraction for d in instances)
        if free <= 1e-9:
            continue
        model = instances[0].model
        seconds = interval * free * sum(1 for ts in timestamps if window_start <= ts < window_end)
        e.capacity_gpu_seconds += seconds
        e.capacity_by_model[model] += seconds
        e.unallocated_gpu_seconds += seconds
        e.unallocated_by_model[model] += seconds

    for pod in scenario.pending:
        fraction = resource_fraction(pod.resource)
        for ts in timestamps:
            if pod.start <= ts < pod.end and window_start <= ts < window_end:
                e.queued_gpu_seconds[pod.namespace] += interval * pod.count * fraction
    # Plain dicts: reading a namespace that had nothing must not silently insert a zero.
    return e.as_plain_dicts()


def _hami_device(e: Expected, scenario: Scenario, truth, window_start: int, window_end: int) -> None:
    """A GPU HAMi shares, sample by sample: each pod its share of the sample, the rest unallocated;
    used as the pod's own utilization of the GPU, idle below the threshold × its share."""
    device, interval = truth.device, scenario.interval_seconds
    for seg in truth.segments:
        for k in range(seg.k0, seg.k1):
            ts = scenario.timestamps[k]
            if not window_start <= ts < window_end:
                continue
            e.capacity_gpu_seconds += interval
            e.capacity_by_model[device.model] += interval
            shares = hami_shares(scenario, device, seg.pods)
            for pod in seg.pods:
                ns, share = pod.namespace, shares[pod.uid]
                gpu_seconds = interval * share
                used = hami_utilization(scenario, pod, k)
                e.allocated_gpu_seconds[ns] += gpu_seconds
                e.used_gpu_seconds[ns] += interval * used
                e.allocated_by_model[device.model] += gpu_seconds
                e.allocated_by_ns_hour[(ns, ts - ts % HOUR_SECONDS)] += gpu_seconds
                e.longest_idle_run_seconds.setdefault((ns, pod.name), 0.0)
                if used < e.idle_threshold * share:
                    e.idle_gpu_seconds[ns] += gpu_seconds
                    e.idle_by_pod[(ns, pod.name)] += gpu_seconds
            free = interval * (1.0 - sum(shares.values()))
            e.unallocated_gpu_seconds += free
            e.unallocated_by_model[device.model] += free
