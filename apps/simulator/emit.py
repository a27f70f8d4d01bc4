"""Series as Prometheus holds them after scraping dcgm-exporter and kube-state-metrics.

Label names and order follow what the exporters publish (docs/ingest.md); which DCGM fields and
labels appear follows the scenario's exporter profile (docs/demo.md, "The simulated exporter").
A change of holding pod changes the label set, so one device's history is several series.
"""
from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field
from typing import Iterator

from .scenario import REPLICA_OFFSET_SECONDS, Scenario, SimDevice, SimPod, resource_name
from .truth import DeviceTruth, hami_utilization, iter_device_truth, memory_mib

DCGM_JOB = "nvidia-dcgm-exporter"
KSM_JOB = "kube-state-metrics"
KSM_INSTANCE = "10.0.0.2:8080"
XID_CODE = 79  # "GPU has fallen off the bus": the classic one to alert on

_POWER_W = {"NVIDIA H100 80GB HBM3": (70.0, 700.0), "NVIDIA A100-SXM4-80GB": (60.0, 400.0),
            "NVIDIA A30": (30.0, 165.0), "NVIDIA L4": (16.0, 72.0)}  # (idle, board limit)
# The share of its board's memory a holder fills: most workloads 30-90 %, a "light" one (a small
# model on a big GPU, docs/demo.md) 3-8 %, so that right-sizing finds it a MIG slice or a share.
_FB_HELD, _FB_LIGHT, _FB_FREE = (0.3, 0.9), (0.03, 0.08), (0.0, 0.01)


@dataclass
class SimSeries:
    metric: str
    labels: dict[str, str]
    samples: list[tuple[int | float, float]] = field(default_factory=list)


def exporter_pod_name(host: str) -> str:
    """dcgm-exporter runs as a DaemonSet: one pod per node with a random-looking suffix."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    digest = hashlib.sha1(host.encode()).digest()
    return "nvidia-dcgm-exporter-" + "".join(alphabet[b % len(alphabet)] for b in digest[:5])


def _host_instances(scenario: Scenario) -> dict[str, str]:
    return {host: f"10.0.{i // 250}.{10 + i % 250}:9400" for i, host in enumerate(scenario.hosts)}


def device_labels(scenario: Scenario, device: SimDevice, instance: str) -> dict[str, str]:
    labels = {"gpu": str(device.gpu_index),
              "uuid" if scenario.spelling == "old" else "UUID": device.uuid,
              "pci_bus_id": device.pci_bus_id,
              "device": f"nvidia{device.gpu_index}",
              "modelName": device.model}
    release = scenario.exporter.release
    if not release.pci_bus_id:
        del labels["pci_bus_id"]
    if device.is_mig:
        labels["GPU_I_PROFILE"] = device.mig_profile
        labels["GPU_I_ID"] = device.mig_instance_id
    labels[scenario.host_label] = device.host
    if release.driver_version_label:
        labels["DCGM_FI_DRIVER_VERSION"] = scenario.driver_version
    return labels


def workload_labels(scenario: Scenario, pod: SimPod | None, host: str) -> dict[str, str]:
    """The spelling-dependent labels; with `exported`, the exporter's own pod is always there."""
    labels: dict[str, str] = {}
    if scenario.spelling == "plain" and pod:
        labels.update(container=pod.container, namespace=pod.namespace, pod=pod.name)
    elif scenario.spelling == "old" and pod:
        labels.update(container_name=pod.container, pod_namespace=pod.namespace, pod_name=pod.name)
    elif scenario.spelling == "exported":
        if pod:
            labels.update(exported_container=pod.container, exported_namespace=pod.namespace,
                          exported_pod=pod.name)
        labels.update(container="nvidia-dcgm-exporter", namespace="gpu-operator", pod=exporter_pod_name(host))
    return labels


DRA_DRIVER = "gpu.nvidia.com"


def dra_labels(scenario: Scenario, device: SimDevice, pod: SimPod | None) -> dict[str, str]:
    """dcgm-exporter's labels (4.4.0+, KUBERNETES_ENABLE_DRA) on the series of a pod holding the
    device through a ResourceClaim: the claim, its namespace, and the device's driver, pool (the
    node) and name in the DRA driver's ResourceSlice; never a pod_uid."""
    template = scenario.dra_claims.get(device.key)
    if not template or pod is None:
        return {}
    return {"dra_claim_name": f"{pod.name}-{template}", "dra_claim_namespace": pod.namespace, "dra_device_name": f"gpu-{device.gpu_index}",
            "dra_driver_name": DRA_DRIVER, "dra_pool_name": device.host}


def _device_metric_values(scenario: Scenario, truth: DeviceTruth, xid_device: bool) -> dict[str, list[float]]:
    """All DCGM gauges of one device, per sample index, driven by its utilization."""
    device = truth.device
    rng = random.Random(f"{scenario.seed}|aux|{device.uuid}|{device.mig_instance_id or ''}")
    fraction = device.gpu_fraction
    board_mib = memory_mib(device.model) * fraction
    idle_w, max_w = _POWER_W.get(device.model, (60.0, 400.0))
    held = [_FB_FREE] * len(truth.utilization)
    for seg in truth.segments:
        if seg.pods:
            light = all(p.pattern == "light" for p in seg.pods)
            held[seg.k0:seg.k1] = [_FB_LIGHT if light else _FB_HELD] * (seg.k1 - seg.k0)
    util, fb, power, temp, xid, energy = [], [], [], [], [], []
    energy_mj = float(rng.randrange(10**9, 10**11))
    n = len(truth.utilization)
    xid_span = range(n // 2, n // 2 + max(1, n // 50)) if xid_device else range(0)
    for k, ratio in enumerate(truth.utilization):
        if device.is_mig:
            util.append(ratio)
        else:
            util.append(float(round(ratio * 100)))  # DCGM reports whole percents
        fb.append(float(round(board_mib * rng.uniform(*held[k]))))
        watts = round((idle_w + ratio * (max_w - idle_w)) * fraction + rng.uniform(-2, 2), 3)
        power.append(watts)
        temp.append(float(round(30 + ratio * 45 + rng.uniform(-1, 1))))
        xid.append(float(XID_CODE) if k in xid_span else 0.0)
        energy_mj += watts * scenario.interval_seconds * 1000
        energy.append(round(energy_mj))
    # The DCP ratios draw from their own generator so the fields above keep their values whatever
    # the counters file. GR_ENGINE_ACTIVE is the engine's busy share: GPU_UTIL / 100 on a whole GPU.
    prof = random.Random(f"{scenario.seed}|prof|{device.uuid}|{device.mig_instance_id or ''}")
    tensor_share, dram_share = prof.uniform(0.3, 0.8), prof.uniform(0.2, 0.6)
    gr = util if device.is_mig else [u / 100 for u in util]
    computed = {"DCGM_FI_DEV_GPU_UTIL": util, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": gr,
                "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": [round(g * tensor_share, 6) for g in gr],
                "DCGM_FI_PROF_DRAM_ACTIVE": [round(g * dram_share, 6) for g in gr],
                "DCGM_FI_DEV_FB_USED": fb, "DCGM_FI_DEV_FB_FREE": [float(round(board_mib)) - f for f in fb],
                "DCGM_FI_DEV_POWER_USAGE": power, "DCGM_FI_DEV_GPU_TEMP": temp, "DCGM_FI_DEV_XID_ERRORS": xid,
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": energy}
    fields = scenario.exporter.mig_fields if device.is_mig else scenario.exporter.fields
    return {f: computed[f] for f in fields}


def _dcgm_series(scenario: Scenario, truth: DeviceTruth, instance: str, xid_device: bool,
                 values: dict[str, list[float]] | None = None) -> Iterator[SimSeries]:
    device = truth.device
    timestamps = scenario.timestamps
    base = device_labels(scenario, device, instance)
    tail = {"instance": instance, "job": DCGM_JOB}
    sliced = device.key in scenario.time_sliced
    # dcgm-exporter does not know HAMi's vGPUs: a GPU HAMi shares has its device series only.
    hami = device.key in scenario.hami_devices
    pod_uid_label = scenario.exporter.release.pod_uid
    # vgpu numbers are stable per pod on a shared device so its series never fragment.
    sharing = {p.uid: p for s in truth.segments for p in s.pods}
    vgpu_of = {uid: str(i) for i, uid in enumerate(sorted(sharing, key=lambda u: (sharing[u].start, u)))}
    if values is None:
        values = _device_metric_values(scenario, truth, xid_device)
    for metric, values in values.items():
        if hami:
            yield SimSeries(metric, {**base, **workload_labels(scenario, None, device.host), **tail},
                            [(timestamps[k], v) for k, v in enumerate(values)])
            continue
        if sliced:
            # dcgm-exporter with --kubernetes-virtual-gpus replaces a shared GPU's series by one
            # copy per pod holding it (docs/demo.md, "The simulated exporter"): the device's own
            # series only while no pod holds it, so its unallocated hours are still seen.
            free = [(timestamps[k], values[k]) for seg in truth.segments if not seg.pods for k in range(seg.k0, seg.k1)]
            if free:
                yield SimSeries(metric, {**base, **workload_labels(scenario, None, device.host), **tail}, free)
            for pod_uid, vgpu in vgpu_of.items():
                pod_samples = [(timestamps[k], values[k]) for seg in truth.segments
                               if any(p.uid == pod_uid for p in seg.pods) for k in range(seg.k0, seg.k1)]
                labels = {**base, **workload_labels(scenario, sharing[pod_uid], device.host),
                          **({"pod_uid": pod_uid} if pod_uid_label else {}), "vgpu": vgpu, **tail}
                yield SimSeries(metric, labels, pod_samples)
            continue
        current: SimSeries | None = None
        for seg in truth.segments:
            pod = seg.pods[0] if seg.pods else None
            labels = {**base, **workload_labels(scenario, pod, device.host), **dra_labels(scenario, device, pod), **tail}
            if current is None or current.labels != labels:
                if current is not None:
                    yield current
                current = SimSeries(metric, labels, [])
            current.samples.extend((timestamps[k], values[k]) for k in range(seg.k0, seg.k1))
        if current is not None and current.samples:
            yield current


HAMI_SCHEDULER = {"instance": "10.0.0.3:31993", "job": "hami-scheduler", "zone": "vGPU"}
HAMI_MONITOR_PORT = 31992
MIB = 1024 * 1024


def _hami_series(scenario: Scenario) -> Iterator[SimSeries]:
    """HAMi's scheduler and monitor series (2.9+ names) of the GPUs it shares: per GPU its cores
    and memory; per pod its cores, memory, SM utilization and memory in use
    (docs/accounting.md, "HAMi fractional GPUs")."""
    devices = scenario.device_by_key
    times = list(scenario.timestamps)
    for key in sorted(scenario.hami_devices):
        device = devices[key]
        gpu = {"node": device.host, "device_uuid": device.uuid, "device_index": str(device.gpu_index),
               "device_type": f"NVIDIA-{device.model}", **HAMI_SCHEDULER}
        yield SimSeries("hami_gpu_core_limit_ratio", gpu, [(t, 100.0) for t in times])
        yield SimSeries("hami_gpu_memory_limit_bytes", gpu, [(t, float(memory_mib(device.model) * MIB)) for t in times])
    for pod in scenario.pods:
        if pod.uid not in scenario.hami_shares:
            continue
        cores, mem = scenario.hami_shares[pod.uid]
        held = [(k, t) for k, t in enumerate(times) if pod.holds_at(t)]
        for key in pod.devices:
            device = devices[key]
            ctr = {"namespace": pod.namespace, "node": device.host, "pod": pod.name, "container_index": "0",
                   "device_uuid": device.uuid, **HAMI_SCHEDULER}
            yield SimSeries("hami_vgpu_core_allocated_ratio", ctr, [(t, float(cores)) for _, t in held])
            yield SimSeries("hami_vgpu_memory_allocated_bytes", ctr, [(t, float(mem * MIB)) for _, t in held])
            monitor = {"namespace": pod.namespace, "pod": pod.name, "container": pod.container, "vdevice_index": "0",
                       "device_uuid": device.uuid, "instance": f"{device.host}:{HAMI_MONITOR_PORT}",
                       "job": "hami-device-plugin-monitor"}
            yield SimSeries("hami_container_device_utilization_ratio", monitor,
                            [(t, round(hami_utilization(scenario, pod, k) * 100, 6)) for k, t in held])
            yield SimSeries("hami_vgpu_memory_used_bytes", monitor, [(t, float(mem * MIB // 2)) for _, t in held])


_RANDOM_SUFFIX = re.compile(r"(.+)-([bcdfghjklmnpqrstvwxz2456789]{5})")
_JOB_WORKER = re.compile(r"(.+)-worker-\d+")


def owner_of(pod_name: str) -> tuple[str, str, str | None, str | None]:
    """(owner kind, owner name, its own owner's kind, name) as kube-state-metrics would show a
    simulated pod's controller: `<prefix>-<5 chars>` a Deployment's pod (through a ReplicaSet),
    `<name>-worker-<n>` a Job's, `jupyter-<user>` a notebook's StatefulSet, anything else none."""
    if pod_name.startswith("jupyter-"):
        return "StatefulSet", pod_name, None, None
    m = _JOB_WORKER.fullmatch(pod_name)
    if m:
        return "Job", m.group(1), None, None
    m = _RANDOM_SUFFIX.fullmatch(pod_name)
    if m:
        rs_hash = hashlib.sha256(m.group(1).encode()).hexdigest()[:9]
        return "ReplicaSet", f"{m.group(1)}-{rs_hash}", "Deployment", m.group(1)
    return "<none>", "<none>", None, None


def _owner_series(scenario: Scenario, ksm: dict) -> Iterator[SimSeries]:
    """kube_pod_owner per pod, kube_replicaset_owner per ReplicaSet, and the `notebook-name`
    label of notebook pods (kube_pod_labels, as with an allowlist for it)."""
    parents: dict[tuple[str, str], tuple[str, str]] = {}
    for pod in scenario.pods:
        times = _clip(scenario, pod.start, pod.end)
        if not times:
            continue
        kind, name, parent_kind, parent_name = owner_of(pod.name)
        controller = "true" if kind != "<none>" else "<none>"
        yield SimSeries("kube_pod_owner", {"namespace": pod.namespace, "pod": pod.name, "uid": pod.uid,
                                           "owner_kind": kind, "owner_name": name,
                                           "owner_is_controller": controller, **ksm}, [(t, 1.0) for t in times])
        if kind == "StatefulSet":
            yield SimSeries("kube_pod_labels", {"namespace": pod.namespace, "pod": pod.name, "uid": pod.uid,
                                                "label_notebook_name": pod.name, **ksm}, [(t, 1.0) for t in times])
        if parent_kind:
            parents[(pod.namespace, name)] = (parent_kind, parent_name)
    for (ns, replicaset), (kind, name) in sorted(parents.items()):
        yield SimSeries("kube_replicaset_owner", {"namespace": ns, "replicaset": replicaset, "owner_kind": kind,
                                                  "owner_name": name, "owner_is_controller": "true", **ksm},
                        [(t, 1.0) for t in scenario.timestamps])


def _clip(scenario: Scenario, start: int, end: int) -> list[int]:
    return [ts for ts in scenario.timestamps if start <= ts < end]


def _ksm_series(scenario: Scenario) -> Iterator[SimSeries]:
    ksm = {"instance": KSM_INSTANCE, "job": KSM_JOB}
    devices = scenario.device_by_key
    for pod in scenario.pods:
        times = _clip(scenario, pod.start, pod.end)
        if not times:
            continue
        first = devices[pod.devices[0]]
        labels = {"namespace": pod.namespace, "pod": pod.name, "uid": pod.uid, "container": pod.container,
                  "node": first.host, "resource": resource_name(first.mig_profile), "unit": "integer", **ksm}
        if not all(key in scenario.dra_claims for key in pod.devices):     # a claim is no resource request
            yield SimSeries("kube_pod_container_resource_requests", labels,
                            [(t, float(len(pod.devices))) for t in times])
        if pod.uid in scenario.hami_shares:       # HAMi's own resources beside its one vGPU
            for resource, amount in zip(("nvidia_com_gpucores", "nvidia_com_gpumem"), scenario.hami_shares[pod.uid]):
                yield SimSeries("kube_pod_container_resource_requests", {**labels, "resource": resource},
                                [(t, float(amount)) for t in times])
        yield SimSeries("kube_pod_status_phase", {"namespace": pod.namespace, "pod": pod.name, "uid": pod.uid,
                                                  "phase": "Running", **ksm}, [(t, 1.0) for t in times])
    for pod in scenario.pending:
        times = _clip(scenario, pod.start, pod.end)
        if not times:
            continue
        # An unscheduled pod has node="" in kube-state-metrics, which Prometheus drops.
        labels = {"namespace": pod.namespace, "pod": pod.name, "uid": pod.uid, "container": pod.container}
        if pod.node:
            labels["node"] = pod.node
        labels.update(resource=pod.resource, unit="integer", **ksm)
        yield SimSeries("kube_pod_container_resource_requests", labels, [(t, float(pod.count)) for t in times])
        yield SimSeries("kube_pod_status_phase", {"namespace": pod.namespace, "pod": pod.name, "uid": pod.uid,
                                                  "phase": "Pending", **ksm}, [(t, 1.0) for t in times])
    yield from _owner_series(scenario, ksm)
    all_times = list(scenario.timestamps)
    for ns in sorted(scenario.namespace_teams.keys() | scenario.namespace_relabels.keys()):
        # A re-label changes the label set: kube-state-metrics then exports a new series.
        times_by_team: dict[str | None, list[int]] = {}
        for t in all_times:
            times_by_team.setdefault(scenario.team_at(ns, t), []).append(t)
        for team, times in sorted(times_by_team.items(), key=lambda kv: kv[1][0]):
            labels = {"namespace": ns, **({"label_team": team} if team else {}), **ksm}
            yield SimSeries("kube_namespace_labels", labels, [(t, 1.0) for t in times])
    for ns, hard in sorted(scenario.quotas.items()):
        common = {"namespace": ns, "resourcequota": "gpu-quota", "resource": "requests.nvidia.com/gpu"}
        yield SimSeries("kube_resourcequota", {**common, "type": "hard", **ksm}, [(t, float(hard)) for t in all_times])
        whole_pods = [p for p in scenario.pods if p.namespace == ns and not devices[p.devices[0]].is_mig]
        used = [(t, float(sum(len(p.devices) for p in whole_pods if p.holds_at(t)))) for t in all_times]
        yield SimSeries("kube_resourcequota", {**common, "type": "used", **ksm}, used)
    for host in scenario.hosts:
        whole = [d for d in scenario.devices if d.host == host and not d.is_mig]
        # A time-sliced GPU is advertised as several replicas (here: 4).
        allocatable = sum(4 if d.key in scenario.time_sliced else 1 for d in whole)
        yield SimSeries("kube_node_status_allocatable",
                        {"node": host, "resource": "nvidia_com_gpu", "unit": "integer", **ksm},
                        [(t, float(allocatable)) for t in all_times])


def iter_series(scenario: Scenario) -> Iterator[SimSeries]:
    """Every series of the scenario, device by device, then kube-state-metrics; once per
    replica of an HA pair when the scenario has replicas."""
    if not scenario.replicas:
        yield from _iter_series(scenario)
        return
    for i, replica in enumerate(scenario.replicas):
        shift = i * REPLICA_OFFSET_SECONDS
        for s in _iter_series(scenario):
            yield SimSeries(s.metric, {**s.labels, "prometheus_replica": replica},
                            [(t + shift, v) for t, v in s.samples])


def _iter_series(scenario: Scenario) -> Iterator[SimSeries]:
    problems = scenario.exporter_problems()
    if problems:
        raise ValueError("; ".join(problems))
    instances = _host_instances(scenario)
    whole = [d.key for d in scenario.devices if not d.is_mig]
    # One GPU reports an XID for a short stretch mid-window, as a health signal to find.
    xid_key = random.Random(f"{scenario.seed}|xid").choice(whole) if whole else None
    boards: dict[str, list[DeviceTruth]] = {}
    for truth in iter_device_truth(scenario):
        if truth.device.is_mig:
            boards.setdefault(truth.device.uuid, []).append(truth)
            continue
        yield from _dcgm_series(scenario, truth, instances[truth.device.host], truth.device.key == xid_key)
    for truths in boards.values():
        # dcgm-exporter reports the board's power on every MIG instance of the GPU: the
        # instances' draws summed, the same value on each (docs/accounting.md).
        values = [_device_metric_values(scenario, t, False) for t in truths]
        board = [round(sum(v["DCGM_FI_DEV_POWER_USAGE"][k] for v in values), 3)
                 for k in range(len(scenario.timestamps))]
        for truth, v in zip(truths, values):
            v["DCGM_FI_DEV_POWER_USAGE"] = board
            yield from _dcgm_series(scenario, truth, instances[truth.device.host], False, v)
    yield from _hami_series(scenario)
    yield from _ksm_series(scenario)
