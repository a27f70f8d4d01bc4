"""Reading DCGM labels: spelling, interval, device identity, workloads, MIG fractions."""
from __future__ import annotations

import re
from typing import Iterable, Mapping

from .records import (A30_PROFILES, CANONICAL_LABELS, MIG_SLICES_BY_MODEL, PROFILE_SLICES, TIME_SLICE_LABELS,
                      WORKLOAD_LABELS, Series)
from .arrays import stream_columns
from .dra import claim_workload, is_dra
from .timeline import StreamGaps


def detect_spelling(label_names: Iterable[str]) -> str:
    """Which of the three workload spellings a cluster's DCGM series use.

    Decided per cluster, not per series: with `exported_*` present, a series that carries only
    `namespace`/`pod` names the exporter's own pod and must not count as a workload.
    """
    names = set(label_names)
    if names & {"exported_namespace", "exported_pod"}:
        return "exported"
    if names & {"pod_namespace", "pod_name"}:
        return "old"
    return "plain"


def canonical(labels: Mapping[str, str]) -> Mapping[str, str]:
    """Labels with the lower-cased DCGM names some exporters emit (`gpu_i_profile`, `modelname`,
    `uuid`, `hostname`) spelled the usual way; the labels themselves when nothing changes."""
    if CANONICAL_LABELS.keys().isdisjoint(labels):
        return labels
    out = dict(labels)
    for low, usual in CANONICAL_LABELS.items():
        if low in out:
            value = out.pop(low)
            out.setdefault(usual, value)
    return out


EXPORTER_POD = re.compile(r"dcgm-exporter", re.I)


def names_the_exporter(labels: Mapping[str, str], spelling: str) -> bool:
    """A workload label set naming dcgm-exporter's own pod or container (docs/accounting.md,
    "The exporter's own namespace"): what an idle GPU's series carry under honorLabels
    false in a window without `exported_*` labels, or under honorLabels true when the
    exporter omits empty pod labels and the series inherit the scrape target's."""
    ns_label, pod_label, container_label = WORKLOAD_LABELS[spelling]
    return bool(EXPORTER_POD.search(labels.get(pod_label, "")) or EXPORTER_POD.search(labels.get(container_label, "")))


def detect_interval(series: Iterable[Series]) -> float | None:
    """Median spacing of consecutive samples, over the medians of each series."""
    ts, _, offsets = stream_columns([s.samples for s in series])
    return StreamGaps(ts, offsets).typical_spacing()


def profile_slices(profile: str) -> int | None:
    m = PROFILE_SLICES.match(profile or "")
    if not m:
        return None
    return int(m.group(1) or m.group(2))


def mig_max_slices(model: str, profile: str, overrides: Mapping[str, int] | None = None):
    """(max slices, known?) for a MIG-capable model; unknown models fall back on the profile."""
    if overrides and model in overrides:
        return int(overrides[model]), True
    for pattern, slices in MIG_SLICES_BY_MODEL:
        if pattern.search(model or ""):
            return slices, True
    if profile in A30_PROFILES:
        return 4, False
    return 7, False


def gpu_fraction(model: str, profile: str, overrides=None) -> tuple[float, str | None]:
    """Share of a whole GPU: 1, or compute slices of the MIG profile over the model's maximum."""
    if not profile:
        return 1.0, None
    slices = profile_slices(profile)
    max_slices, known = mig_max_slices(model, profile, overrides)
    if slices is None:
        return 1.0 / max_slices, f"MIG profile {profile!r} on {model!r} has no slice count; counted as 1/{max_slices}"
    warning = None
    if not known:
        warning = (f"GPU model {model!r} is not in the MIG table; profile {profile} counted as "
                   f"{slices}/{max_slices} (set the cluster's MIG slices override)")
    return min(1.0, slices / max_slices), warning


def mig_resource_profile(resource: str) -> str | None:
    """`nvidia_com_mig_1g_10gb` -> `1g.10gb` (kube-state-metrics writes `.` and `-` as `_`)."""
    prefix = "nvidia_com_mig_"
    if not resource.startswith(prefix):
        return None
    parts = resource[len(prefix):].split("_")
    if len(parts) < 2:
        return None
    return parts[0] + "." + ".".join(parts[1:])


def is_gpu_resource(resource: str) -> bool:
    """A kube-state-metrics resource name that asks for an NVIDIA GPU or a share of one: whole
    GPUs, time-sliced replicas renamed `nvidia.com/gpu.shared`, MIG profiles (mixed strategy)."""
    return resource in ("nvidia_com_gpu", "nvidia_com_gpu_shared") or resource.startswith("nvidia_com_mig_")


def resource_fraction(resource: str) -> float:
    if resource == "nvidia_com_gpu":
        return 1.0
    profile = mig_resource_profile(resource)
    if profile is None:
        return 1.0
    slices = profile_slices(profile) or 1
    return slices / (4 if profile in A30_PROFILES else 7)


def sanitize_label_key(key: str) -> str:
    """kube-state-metrics turns a Kubernetes label key into `label_<key>` with `_` for the rest."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


def device_key(labels: Mapping[str, str]) -> tuple[str, str]:
    """The device a series is about: (its GPU's UUID, its MIG instance's id or "")."""
    uuid = labels.get("UUID") or labels.get("uuid")
    if not uuid:
        uuid = f"{labels.get('Hostname') or labels.get('hostname') or ''}:gpu{labels.get('gpu', '')}"
    return uuid, (labels.get("GPU_I_ID", "") if labels.get("GPU_I_PROFILE") else "")


def device_identity(labels: Mapping[str, str]) -> tuple[tuple[str, str], dict]:
    """`device_key`, and what the series says of its device (the inventory's columns)."""
    key = device_key(labels)
    info = {
        "uuid": key[0], "mig_instance_id": key[1], "gpu_index": labels.get("gpu", ""),
        "host": labels.get("Hostname") or labels.get("hostname") or "",
        "model_name": labels.get("modelName", ""), "mig_profile": labels.get("GPU_I_PROFILE", ""),
        "pci_bus_id": labels.get("pci_bus_id", ""),
    }
    return key, info


def workload_of(labels: Mapping[str, str], spelling: str) -> tuple[str, str]:
    """(namespace, pod) a series names; a DRA series without workload labels names its claim's
    namespace (docs/accounting.md, "DRA-allocated GPUs")."""
    ns_label, pod_label, _ = WORKLOAD_LABELS[spelling]
    namespace = labels.get(ns_label, "")
    if not namespace:
        return claim_workload(labels, labels.get(pod_label, "")) if is_dra(labels) else ("", "")
    return namespace, labels.get(pod_label, "")


def is_time_slice(labels: Mapping[str, str]) -> bool:
    """A per-pod series of a shared GPU: a time-sliced GPU's (`vgpu`), or one of the copies
    dcgm-exporter makes for each pod of a ResourceClaim (its pods share the device)."""
    return any(labels.get(name) for name in TIME_SLICE_LABELS) or is_dra(labels)
