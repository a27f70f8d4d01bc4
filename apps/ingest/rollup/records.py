"""Data shapes of the rollup: series in, records out; units in the names."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

HOUR_SECONDS = 3600
HOT_TEMPERATURE_C = 83.0

WORKLOAD_LABELS = {
    "plain": ("namespace", "pod", "container"),
    "exported": ("exported_namespace", "exported_pod", "exported_container"),
    "old": ("pod_namespace", "pod_name", "container_name"),
}
WORKLOAD_NAMES = frozenset(name for names in WORKLOAD_LABELS.values() for name in names) | {"pod_uid", "vgpu"}
# Only `vgpu` marks a per-pod series of a time-sliced GPU; `pod_uid` alone (dcgm-exporter's
# --kubernetes-enable-pod-uid) is an ordinary workload label (docs/accounting.md).
TIME_SLICE_LABELS = ("vgpu",)
# Labels an HA Prometheus pair, Thanos, Mimir or a federation add to tell replicas apart.
DEFAULT_REPLICA_LABELS = ("prometheus_replica", "replica", "__replica__", "rule_replica", "receive_replica")
# Lower-cased label names some managed clusters' exporters emit, and the spelling used here.
CANONICAL_LABELS = {"gpu_i_profile": "GPU_I_PROFILE", "gpu_i_id": "GPU_I_ID", "modelname": "modelName",
                    "uuid": "UUID", "hostname": "Hostname"}

# DCGM's markers for a field without a value (go-dcgm's DCGM_FT_{INT32,INT64,FP64}_{BLANK,
# NOT_FOUND,NOT_SUPPORTED,NOT_PERMISSIONED}), as the floats a scrape makes of them: the four
# int64 ones all round to 2**63. dcgm-exporter wrote them out as readings before 4.5.2; they
# are no reading (docs/ingest.md, "What real exporters emit").
DCGM_NO_VALUE = frozenset({2147483632.0, 2147483633.0, 2147483634.0, 2147483635.0, float(2 ** 63),
                           140737488355328.0, 140737488355329.0, 140737488355330.0, 140737488355331.0})
NO_VALUE_FLOOR = min(DCGM_NO_VALUE)


def is_no_value(value: float) -> bool:
    """Whether a sample's value is one of DCGM's no-value markers."""
    return value in DCGM_NO_VALUE


# Maximum compute slices of a MIG-capable GPU, matched on the DCGM modelName.
MIG_SLICES_BY_MODEL = (
    (re.compile(r"\bA30\b"), 4),
    (re.compile(r"RTX PRO 6000", re.I), 4),
    (re.compile(r"\b(A100|A800|H100|H800|H200|H20|GH200|B100|B200|GB200|B300|GB300)\b"), 7),
)
# A30-only profiles (24 GB split in 4): lets a pending pod's MIG request be sized without a device.
A30_PROFILES = {"1g.6gb", "1g.6gb+me", "2g.12gb", "2g.12gb+me", "4g.24gb"}
PROFILE_SLICES = re.compile(r"^(?:(\d+)c\.)?(\d+)g\.")


class Samples(Sequence):
    """A series' samples as two float arrays, timestamps and values, as the ingest's parser makes
    them (16 bytes a sample where a list of tuples takes ~110: docs/performance.md, "Peak memory
    of ingest"). Reads as the time-ordered (unix seconds, value) pairs a list of tuples holds, so
    every reader of `Series.samples` takes either; the roll-up's hot paths use the arrays."""

    __slots__ = ("ts", "values")

    def __init__(self, ts: np.ndarray, values: np.ndarray):
        self.ts, self.values = ts, values

    def __len__(self) -> int:
        return len(self.ts)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Samples(self.ts[i], self.values[i])
        return float(self.ts[i]), float(self.values[i])

    def __iter__(self):
        return zip(self.ts.tolist(), self.values.tolist())

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and list(self) == list(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"Samples({list(self)!r})"


@dataclass(frozen=True)
class Series:
    labels: Mapping[str, str]
    samples: Sequence[tuple[float, float]]  # (unix seconds, value), time-ordered; or Samples


@dataclass(frozen=True)
class HourlySeries:
    """A series summed by Prometheus per hour: (hour start, sum, count, max) of its raw samples.

    Stands in for a raw Series of memory or power, whose rollups need only these per hour
    (docs/performance.md: Prometheus-side aggregation where it is exact).
    """
    labels: Mapping[str, str]
    hours: Sequence[tuple[int, float, int, float]]


@dataclass(frozen=True)
class Window:
    start: int  # unix seconds, a whole hour
    end: int    # exclusive

    def hours(self):
        return range(self.start, self.end, HOUR_SECONDS)

    def contains(self, ts: float) -> bool:
        return self.start <= ts < self.end


@dataclass
class RollupConfig:
    spelling: str
    interval_seconds: float            # used only when a series has a single sample (docs/accounting.md)
    pinned_interval_seconds: float | None = None   # admin override: every sample counts this long
    replica_labels: Sequence[str] = DEFAULT_REPLICA_LABELS
    time_slicing: str = "auto"         # auto | copies | own (docs/accounting.md "Time-sliced GPUs")
    # (namespace, pod) pairs kube-state-metrics shows requesting a GPU near the chunk; None: unknown
    gpu_pods: frozenset | None = None
    idle_threshold: float = 0.05
    util_scale: float = 0.01           # GPU_UTIL percent -> ratio
    mig_util_scale: float = 1.0        # GR_ENGINE_ACTIVE already a ratio
    fb_scale: float = 1.0
    power_scale: float = 1.0
    temperature_scale: float = 1.0
    mig_slices_overrides: Mapping[str, int] = field(default_factory=dict)
    # a MIG-mode GPU's slices no instance occupies count as its unallocated capacity
    # (docs/accounting.md, "When devices change"); off only where a test compares the roll-up
    # with the per-sample loops that predate the rule (tests/rollup_oracle)
    unoccupied_slices: bool = True


@dataclass(frozen=True)
class DeviceInfo:
    uuid: str
    mig_instance_id: str
    gpu_index: str
    host: str
    model_name: str
    mig_profile: str
    pci_bus_id: str
    gpu_fraction: float
    first_seen: float
    last_seen: float

    @property
    def key(self):
        return (self.uuid, self.mig_instance_id)


@dataclass
class UsageRecord:
    device_key: tuple[str, str]
    namespace: str
    pod: str
    hour_start: int
    node: str
    gpu_model: str
    mig_profile: str
    gpu_fraction: float
    sample_count: int = 0
    gpu_seconds: float = 0.0
    used_gpu_seconds: float = 0.0
    idle_gpu_seconds: float = 0.0
    mig_seconds: float = 0.0
    unknown_util_samples: int = 0
    idle_prefix_seconds: float = 0.0
    idle_suffix_seconds: float = 0.0
    idle_max_run_seconds: float = 0.0
    idle_whole_hour: bool = False
    fb_used_mib_avg: float | None = None
    fb_used_mib_max: float | None = None
    power_watts_avg: float | None = None
    energy_joules: float | None = None
    dra_claim: bool = False         # held through a DRA ResourceClaim (dcgm-exporter's dra_* labels)


@dataclass
class HealthRecord:
    device_key: tuple[str, str]
    hour_start: int
    temperature_c_avg: float | None = None
    temperature_c_max: float | None = None
    seconds_above_83c: float = 0.0
    power_watts_avg: float | None = None
    energy_joules: float | None = None
    xid_codes: list[int] = field(default_factory=list)
    xid_samples: int = 0


@dataclass
class QueuedRecord:
    namespace: str
    pod: str
    resource: str
    hour_start: int
    requested: float
    pending_seconds: float
    queued_gpu_seconds: float


@dataclass
class QuotaRecord:
    namespace: str
    resource: str
    hour_start: int
    hard: float | None
    used_max: float | None
    seconds_at_hard: float


@dataclass
class NamespaceLabelRecord:
    """A namespace's team label per hour of a chunk: the label of the hour's last sample."""
    namespace: str
    hours: dict[int, str]       # hour start -> label ('' = the namespace had no team label)
    last_seen: float            # the last sample's timestamp


@dataclass
class DeviceRollup:
    usage: list[UsageRecord]
    devices: dict[tuple[str, str], DeviceInfo]
    health: list[HealthRecord]
    warnings: list[str]
    samples_read: int
    duplicates: int = 0   # samples in the window that added no time: copies (docs/accounting.md)


@dataclass
class ClusterQueueRecord:
    cluster_queue: str
    cohort: str
    flavor: str
    resource: str
    observed_at: float
    nominal_quota: float | None = None
    borrowing_limit: float | None = None
    lending_limit: float | None = None
    pending_workloads: float | None = None


def hour_of(ts: float) -> int:
    return int(ts // HOUR_SECONDS) * HOUR_SECONDS


def _finite(value: float) -> bool:
    return not (math.isnan(value) or math.isinf(value))


@dataclass
class PodOwnerRecord:
    """A pod's workload (docs/advice-and-alerts.md, "Right-sizing")."""
    namespace: str
    pod: str
    owner_kind: str
    owner_name: str
    workload_kind: str
    workload_name: str
