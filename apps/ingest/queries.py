"""What ingest asks Prometheus for: the metric names, the query of each role and the label
matchers (docs/ingest.md). `prometheus.py` sends them and checks the answers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .rollup import Series

GPU_RESOURCES_RE = "nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.+"


@dataclass(frozen=True)
class MetricNames:
    gpu_util: str
    gr_engine_active: str
    fb_used: str
    power: str
    temperature: str
    xid: str


def selector(*matchers: str) -> str:
    return "{" + ",".join(m for m in matchers if m) + "}"


def promql_regex_literal(value: str) -> str:
    """`value` matched literally inside a PromQL `=~"…"` string (RE2 escape, then string escape)."""
    return re.escape(value).replace("\\", "\\\\").replace('"', '\\"')


def pending_pods(phase: list[Series]) -> set[tuple[str, str]]:
    """(namespace, pod) of every pod with a Pending sample (value 1) among the phase series."""
    return {(s.labels.get("namespace", ""), s.labels.get("pod", "")) for s in phase
            if s.labels.get("phase") == "Pending" and any(v == 1 for _, v in s.samples)}


# Roles whose rollups need only per-hour sum / count / max of each series (rollup.HourlySeries).
# Power is read raw: energy needs each sample's own duration, once per board (docs/accounting.md).
HOURLY_ROLES = {"fb_used": ("sum", "count", "max"), "temperature": ("sum", "count", "max"), "xid": ("max",)}
# Roles whose hours without a non-zero aggregate are never read: XID errors matter only where
# there was one, so Prometheus answers those hours alone (`!= 0`), and the rest never travel.
HOURLY_NONZERO = frozenset({"xid"})
MAX_RAW_DEVICES = 200   # beyond this many devices in a chunk, one raw query for the whole metric


def dcgm_queries(names: MetricNames) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {
        "whole_util": (names.gpu_util, ('GPU_I_PROFILE=""', 'gpu_i_profile=""')),
        "mig_util": (names.gr_engine_active, ('GPU_I_PROFILE!=""',)),
        "mig_util_lower": (names.gr_engine_active, ('gpu_i_profile!=""',)),
        "fb_used": (names.fb_used, ()),
        "power": (names.power, ()),
        "temperature": (names.temperature, ()),
        "xid": (names.xid, ()),
    }


UTILIZATION_ROLES = ("whole_util", "mig_util", "mig_util_lower")


def utilization_queries(names: MetricNames) -> list[tuple[str, tuple[str, ...]]]:
    """(metric, matchers) of each utilization query ingest sends, in `dcgm_queries`' words."""
    queries = dcgm_queries(names)
    return [queries[role] for role in UTILIZATION_ROLES]


KUBE_STATE_QUERIES = {
    "requests": ("kube_pod_container_resource_requests", (f'resource=~"{GPU_RESOURCES_RE}"',)),
    "phase": ("kube_pod_status_phase", ('phase="Pending"',)),
    "namespace_labels": ("kube_namespace_labels", ()),
    "quota": ("kube_resourcequota", ('resource=~"requests.nvidia.com/.+"',)),
    "kueue_nominal": ("kueue_cluster_queue_nominal_quota", ('resource=~"nvidia.com/.+"',)),
    "kueue_borrowing": ("kueue_cluster_queue_borrowing_limit", ('resource=~"nvidia.com/.+"',)),
    "kueue_lending": ("kueue_cluster_queue_lending_limit", ('resource=~"nvidia.com/.+"',)),
    "kueue_pending": ("kueue_pending_workloads", ()),
    # HAMi's GPU shares under its current (2.9+) and legacy names, one query each for both
    # (docs/accounting.md, "HAMi fractional GPUs"; rollup/hami.py says which is which).
    "hami_core": ("", ('__name__=~"hami_vgpu_core_allocated_ratio|vGPUCoreAllocated"',)),
    "hami_memory": ("", ('__name__=~"hami_vgpu_memory_allocated_bytes|vGPUMemoryAllocated"',)),
    "hami_gpu_cores": ("", ('__name__=~"hami_gpu_core_limit_ratio|GPUDeviceCoreLimit"',)),
    "hami_gpu_memory": ("", ('__name__=~"hami_gpu_memory_limit_bytes|GPUDeviceMemoryLimit"',)),
    "hami_util": ("", ('__name__=~"hami_container_device_utilization_ratio|Device_utilization_desc_of_container"',)),
    "hami_memory_used": ("", ('__name__=~"hami_vgpu_memory_used_bytes|vGPU_device_memory_usage_in_bytes"',)),
}
HAMI_ROLES = ("hami_core", "hami_memory", "hami_gpu_cores", "hami_gpu_memory", "hami_util", "hami_memory_used")

_NS = ("namespace", "exported_namespace")
# role -> (metric, matchers, labels kept): the workload of each pod (rollup.pod_owners).
OWNER_QUERIES = {
    "pod_owner": ("kube_pod_owner", ('owner_is_controller="true"',),
                  (*_NS, "pod", "exported_pod", "owner_kind", "owner_name", "owner_is_controller")),
    "replicaset_owner": ("kube_replicaset_owner", ('owner_is_controller="true"',),
                         (*_NS, "replicaset", "owner_kind", "owner_name")),
    "job_owner": ("kube_job_owner", ('owner_is_controller="true"',), (*_NS, "job_name", "owner_kind", "owner_name")),
    "notebook_labels": ("kube_pod_labels", ('label_notebook_name!=""',),
                        (*_NS, "pod", "exported_pod", "label_notebook_name")),
}
