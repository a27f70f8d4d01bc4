"""Which dcgm-exporter the simulator imitates: a release (it decides the label set) and a counters
file (it decides the fields). The evidence for every flag below is in docs/demo.md, "The simulated
exporter"; only what was found there is modelled.

The field lists are a representative subset of each file, not all of it, so that test backfills stay
quick; their names and roles are what matter to ingest.
"""
from __future__ import annotations

from dataclasses import dataclass

COUNTERS = ("dcp-metrics-included", "default-counters")
DEFAULT_COUNTERS = "dcp-metrics-included"  # what the GPU Operator's DaemonSet passes (docs/demo.md)

# Follows dcgm-exporter's etc/dcp-metrics-included.csv (the same in every release listed below).
DCP_METRICS_INCLUDED = (
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
)
# Follows etc/default-counters.csv before 4.0.0-4.0.1: no DCP (profiling) engine fields.
DEFAULT_COUNTERS_3 = (
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
)
# Follows etc/default-counters.csv from 4.0.0-4.0.1 on, which gained the DCP fields.
DEFAULT_COUNTERS_4 = (
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
)
# A MIG instance has no GPU_UTIL of its own (ingest reads GR_ENGINE_ACTIVE there) and energy is a
# whole-board counter: neither is emitted for an instance.
NOT_ON_MIG = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
MIG_UTIL = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"


@dataclass(frozen=True)
class Release:
    """What one dcgm-exporter release puts on its series (docs/demo.md has the evidence)."""

    version: str
    host_label: str = "Hostname"  # "hostname" once the rename reached a release
    driver_version_label: bool = True  # DCGM_FI_DRIVER_VERSION as a label on every series
    pci_bus_id: bool = True
    virtual_gpus: bool = True  # --kubernetes-virtual-gpus: per-pod `vgpu` series on a shared GPU
    pod_uid: bool = True  # the pod's uid on those per-pod series
    prof_in_default_counters: bool = True


RELEASES = {r.version: r for r in (
    Release("2.4.6-2.6.8", driver_version_label=False, pci_bus_id=False, virtual_gpus=False, pod_uid=False,
            prof_in_default_counters=False),
    Release("3.3.9-3.6.1", virtual_gpus=False, pod_uid=False, prof_in_default_counters=False),
    Release("4.2.3-4.2.0", pod_uid=False),
    Release("4.5.3-4.8.2"),
    Release("4.6.0-4.8.3", host_label="hostname"),
)}
# The newest release whose code was read; its label set is the one the simulator always emitted.
DEFAULT_VERSION = "4.5.3-4.8.2"


@dataclass(frozen=True)
class ExporterProfile:
    version: str = DEFAULT_VERSION
    counters: str = DEFAULT_COUNTERS

    def __post_init__(self):
        if self.version not in RELEASES:
            raise ValueError(f"exporter version must be one of {tuple(RELEASES)}")
        if self.counters not in COUNTERS:
            raise ValueError(f"counters must be one of {COUNTERS}")

    @property
    def release(self) -> Release:
        return RELEASES[self.version]

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields a whole GPU exports, in emission order."""
        if self.counters == "dcp-metrics-included":
            return DCP_METRICS_INCLUDED
        return DEFAULT_COUNTERS_4 if self.release.prof_in_default_counters else DEFAULT_COUNTERS_3

    @property
    def mig_fields(self) -> tuple[str, ...]:
        return tuple(f for f in self.fields if f not in NOT_ON_MIG)

    def problems(self, has_mig: bool, has_time_sliced: bool) -> list[str]:
        """What this exporter cannot show of a scenario: better refused than emitted wrong."""
        out = []
        if has_mig and MIG_UTIL not in self.fields:
            out.append(f"{self.counters}.csv of {self.version} has no {MIG_UTIL}: MIG instances would "
                       "export no utilization, which the simulator does not model")
        if has_time_sliced and not self.release.virtual_gpus:
            out.append(f"dcgm-exporter {self.version} has no --kubernetes-virtual-gpus: a time-sliced GPU "
                       "has no per-pod series")
        return out
