"""The synthetic cluster's ground truth: devices, pods and who holds what, when.

Everything else in the simulator (the emitted series and the expected figures) is derived
from a `Scenario`; the builders are deterministic for a seed so tests can pin numbers.
"""
from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass, field

from .exporter import ExporterProfile

DeviceKey = tuple[str, str]  # (uuid, mig_instance_id or "")

PATTERNS = ("busy", "idle", "bursty", "mixed", "light")   # light: a small model on a big GPU (docs/demo.md)
SPELLINGS = ("plain", "exported", "old")
HOSTNAME_LABELS = ("Hostname", "hostname")

# Compute slices of the largest MIG profile per model (docs/accounting.md: N/7 or N/4).
_A30_PROFILE_SUFFIXES = ("6gb", "12gb", "24gb")


def mig_slices_max(model: str) -> int:
    return 4 if "A30" in model else 7


def gpu_fraction(model: str, mig_profile: str | None) -> float:
    """Share of a whole GPU that one device stands for: 1, or N/7 (N/4 on A30) for `Ng.*`."""
    if not mig_profile:
        return 1.0
    slices = int(mig_profile.split("g.", 1)[0])
    return slices / mig_slices_max(model)


def resource_name(mig_profile: str | None) -> str:
    """kube-state-metrics' spelling of the extended resource a pod requests."""
    if not mig_profile:
        return "nvidia_com_gpu"
    return "nvidia_com_mig_" + mig_profile.replace(".", "_").replace("-", "_")


def resource_fraction(resource: str, model: str | None = None) -> float:
    """GPU fraction of one unit of a requested resource (for queued demand of Pending pods).

    A Pending pod has no device, so the model comes from the caller if known, else from
    the profile's memory size (6/12/24 GB slices exist only on the A30).
    """
    if resource == "nvidia_com_gpu":
        return 1.0
    profile = resource.removeprefix("nvidia_com_mig_")  # e.g. 1g_10gb
    slices = int(profile.split("g_", 1)[0])
    if model is None:
        model = "NVIDIA A30" if profile.endswith(_A30_PROFILE_SUFFIXES) else "NVIDIA A100-SXM4-80GB"
    return slices / mig_slices_max(model)


@dataclass(frozen=True)
class SimDevice:
    host: str
    gpu_index: int
    uuid: str
    model: str
    pci_bus_id: str
    mig_profile: str | None = None
    mig_instance_id: str | None = None

    @property
    def key(self) -> DeviceKey:
        return (self.uuid, self.mig_instance_id or "")

    @property
    def is_mig(self) -> bool:
        return self.mig_profile is not None

    @property
    def gpu_fraction(self) -> float:
        return gpu_fraction(self.model, self.mig_profile)


@dataclass
class SimPod:
    namespace: str
    name: str
    container: str
    devices: list[DeviceKey]
    start: int  # unix seconds, inclusive
    end: int  # unix seconds, exclusive
    pattern: str
    uid: str = ""  # a fresh uid per pod instance, as Kubernetes does for a re-created pod

    def __post_init__(self):
        if self.pattern not in PATTERNS:
            raise ValueError(f"unknown pattern {self.pattern!r}")
        if not self.uid:
            self.uid = _uid(self.namespace, self.name, str(self.start), ",".join(map(str, self.devices)))

    def holds_at(self, ts: int) -> bool:
        return self.start <= ts < self.end


@dataclass
class PendingPod:
    namespace: str
    name: str
    container: str
    resource: str  # nvidia_com_gpu or nvidia_com_mig_<profile>
    count: int
    start: int
    end: int
    uid: str = ""
    node: str = ""  # Pending pods are unscheduled; kube-state-metrics leaves node empty

    def __post_init__(self):
        if not self.uid:
            self.uid = _uid(self.namespace, self.name, str(self.start), "pending")


# Bumped whenever emit.py changes what a scenario's series look like (the disk cache key).
EMIT_VERSION = "3: an exporter profile (release + counters file); whole GPUs export DCP fields too"
REPLICA_OFFSET_SECONDS = 7


@dataclass
class Scenario:
    name: str
    start: int
    end: int
    interval_seconds: int
    spelling: str = "plain"
    # None: the exporter release's spelling (`Hostname`, or `hostname` from 4.6.0-4.8.3); set to override.
    hostname_label: str | None = None
    devices: list[SimDevice] = field(default_factory=list)
    pods: list[SimPod] = field(default_factory=list)
    pending: list[PendingPod] = field(default_factory=list)
    namespace_teams: dict[str, str | None] = field(default_factory=dict)
    # Re-labels: namespace -> [(from unix second, team or None)], in time order; before the
    # first one the namespace carries its `namespace_teams` value.
    namespace_relabels: dict[str, list[tuple[int, str | None]]] = field(default_factory=dict)
    quotas: dict[str, int] = field(default_factory=dict)
    time_sliced: set[DeviceKey] = field(default_factory=set)
    # Whole GPUs handed out through ResourceClaims (Dynamic Resource Allocation): device -> the
    # claim template's name (a holder's claim is `<pod>-<template>`, as Kubernetes names claims
    # made from a template). Their holders' series carry dcgm-exporter's DRA labels, and
    # kube-state-metrics shows those pods requesting no extended resource (docs/accounting.md,
    # "DRA-allocated GPUs").
    dra_claims: dict[DeviceKey, str] = field(default_factory=dict)
    # Pods on GPUs HAMi shares: pod uid -> (nvidia.com/gpucores, nvidia.com/gpumem MiB). Their GPUs
    # may be held by several of them at once; HAMi's own series say who holds which part
    # (docs/accounting.md, "HAMi fractional GPUs").
    hami_shares: dict[str, tuple[int, int]] = field(default_factory=dict)
    seed: int = 1
    driver_version: str = "570.86.15"
    # An HA Prometheus pair (or more): every series once per replica, labelled
    # prometheus_replica=<name>, each replica scraping REPLICA_OFFSET_SECONDS after the previous.
    replicas: tuple[str, ...] = ()
    # Which dcgm-exporter release and counters file the DCGM series imitate (docs/demo.md).
    exporter: ExporterProfile = field(default_factory=ExporterProfile)

    def __post_init__(self):
        if self.spelling not in SPELLINGS:
            raise ValueError(f"spelling must be one of {SPELLINGS}")
        if self.hostname_label is not None and self.hostname_label not in HOSTNAME_LABELS:
            raise ValueError(f"hostname_label must be one of {HOSTNAME_LABELS}")

    @property
    def host_label(self) -> str:
        """The label dcgm-exporter names the node with: the explicit choice, else the release's."""
        return self.hostname_label or self.exporter.release.host_label

    @property
    def timestamps(self) -> range:
        return range(self.start, self.end, self.interval_seconds)

    @property
    def hami_devices(self) -> set[DeviceKey]:
        return {key for pod in self.pods if pod.uid in self.hami_shares for key in pod.devices}

    @property
    def device_by_key(self) -> dict[DeviceKey, SimDevice]:
        return {d.key: d for d in self.devices}

    @property
    def hosts(self) -> list[str]:
        return sorted({d.host for d in self.devices})

    def team_at(self, namespace: str, ts: int) -> str | None:
        """The namespace's `team` label at a unix second (None: no such label)."""
        team = self.namespace_teams.get(namespace)
        for since, relabelled in self.namespace_relabels.get(namespace, ()):
            if since <= ts:
                team = relabelled
        return team

    def fingerprint(self) -> str:
        """Stable hash of everything that shapes the emitted data (the disk cache key)."""
        h = hashlib.sha256()
        h.update(EMIT_VERSION.encode())
        h.update(repr((self.name, self.start, self.end, self.interval_seconds, self.spelling,
                       self.hostname_label, self.seed, self.driver_version, tuple(self.replicas),
                       self.exporter)).encode())
        for d in self.devices:
            h.update(repr(d).encode())
        for p in self.pods:
            h.update(repr(p).encode())
        for p in self.pending:
            h.update(repr(p).encode())
        h.update(repr(sorted(self.namespace_teams.items(), key=str)).encode())
        if self.namespace_relabels:
            h.update(repr(sorted(self.namespace_relabels.items())).encode())
        h.update(repr(sorted(self.quotas.items())).encode())
        h.update(repr(sorted(self.time_sliced)).encode())
        if self.dra_claims:
            h.update(repr(sorted(self.dra_claims.items())).encode())
        if self.hami_shares:
            h.update(repr(sorted(self.hami_shares.items())).encode())
        return h.hexdigest()[:16]

    def exporter_problems(self) -> list[str]:
        return self.exporter.problems(any(d.is_mig for d in self.devices), bool(self.time_sliced))

    def validate(self) -> None:
        """At a timestamp a device is held by at most one pod, unless it is time-sliced; and the
        chosen exporter can show the cluster."""
        for problem in self.exporter_problems():
            raise ValueError(problem)
        keys = self.device_by_key
        by_device: dict[DeviceKey, list[SimPod]] = {}
        for pod in self.pods:
            if (pod.start - self.start) % self.interval_seconds or (pod.end - self.start) % self.interval_seconds:
                raise ValueError(f"pod {pod.namespace}/{pod.name} is not aligned to sample timestamps")
            for key in pod.devices:
                if key not in keys:
                    raise ValueError(f"pod {pod.namespace}/{pod.name} names unknown device {key}")
                by_device.setdefault(key, []).append(pod)
        hami = self.hami_devices
        for key, pods in by_device.items():
            if key in self.time_sliced or key in hami:
                continue
            pods = sorted(pods, key=lambda p: p.start)
            for a, b in zip(pods, pods[1:]):
                if b.start < a.end:
                    raise ValueError(f"device {key} held by {a.name} and {b.name} at once")


def _uid(*parts: str) -> str:
    digest = hashlib.sha1("|".join(parts).encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _gpu_uuid(rng: random.Random) -> str:
    h = "%032x" % rng.getrandbits(128)
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def default_start(now: float | None = None) -> int:
    """A whole UTC hour at least two days back, so the history lies fully in the past."""
    now = time.time() if now is None else now
    return (int(now) // 3600) * 3600 - 2 * 86400 - 3600

