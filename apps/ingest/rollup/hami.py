"""GPUs shared by HAMi (Project-HAMi): a pod's fraction of a GPU, from HAMi's own metrics
(docs/accounting.md, "HAMi fractional GPUs").

The rule: at each instant a pod's share of a GPU is the larger of its core share (its
`gpucores` over the GPU's cores) and its memory share (its `gpumem` over the GPU's memory); the
shares of a GPU's pods add up to at most one GPU (more is overcommitment: every share is
scaled down in proportion, and the run log says so); what is left of the GPU is unallocated
capacity. The GPU's own time (its capacity, its energy) is what dcgm-exporter's series say of it;
HAMi's series say who holds which part of it, and how busy each part is.

Read under both of HAMi's names (2.9 renamed them, `--legacy-metrics` keeps the old ones):

| role | current (2.9+) | legacy |
| --- | --- | --- |
| a container's cores on a GPU (percent of it) | `hami_vgpu_core_allocated_ratio{namespace, pod, container_index, device_uuid}` | `vGPUCoreAllocated{podnamespace, podname, containeridx, deviceuuid}` |
| a container's memory on a GPU (bytes) | `hami_vgpu_memory_allocated_bytes{…}` | `vGPUMemoryAllocated{…}` |
| a GPU's cores (100 unless scaled) | `hami_gpu_core_limit_ratio{node, device_uuid}` | `GPUDeviceCoreLimit{nodeid, deviceuuid}` |
| a GPU's memory (bytes) | `hami_gpu_memory_limit_bytes{node, device_uuid}` | `GPUDeviceMemoryLimit{nodeid, deviceuuid}` |
| a container's SM utilization (percent of the GPU) | `hami_container_device_utilization_ratio{namespace, pod, container, vdevice_index, device_uuid}` | `Device_utilization_desc_of_container{podnamespace, podname, ctrname, vdeviceid, deviceuuid}` |
| a container's GPU memory in use (bytes) | `hami_vgpu_memory_used_bytes{…}` | `vGPU_device_memory_usage_in_bytes{…}` |
"""
from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from datetime import datetime, timezone
from typing import Iterable, Mapping

import numpy as np

from .copies import merge_copies
from .records import HOUR_SECONDS, DeviceRollup, RollupConfig, Series, UsageRecord, Window, hour_of
from .timeline import durations

CORES_PER_GPU = 100.0        # a GPU's cores when HAMi's limit series is missing (its default)
MIB = 1024 * 1024


def _ns_pod(labels: Mapping[str, str]) -> tuple[str, str]:
    """The pod a HAMi series names: `exported_*` first (a Prometheus that renamed the series'
    own `namespace`/`pod` because the scrape target has them), then the legacy names."""
    ns = labels.get("exported_namespace") or labels.get("podnamespace") or labels.get("namespace", "")
    pod = labels.get("exported_pod") or labels.get("podname") or labels.get("pod", "")
    return ns, pod


def _device(labels: Mapping[str, str]) -> str:
    return labels.get("device_uuid") or labels.get("deviceuuid") or ""


def _container(labels: Mapping[str, str]) -> str:
    for name in ("container_index", "containeridx", "container", "ctrname", "exported_container"):
        if labels.get(name):
            return labels[name]
    return ""


def _steps(series: Iterable[Series], key_of, cfg: RollupConfig) -> dict[tuple, list[tuple[float, float, float]]]:
    """Per key, its samples as (start, end, value) steps: copies of one key (replicas, two scrape
    jobs) merged, each sample counting as long as a DCGM sample would (docs/accounting.md)."""
    grouped: dict[tuple, list] = defaultdict(list)
    for s in series:
        key = key_of(s.labels)
        if key is not None and len(s.samples):
            grouped[key].append(list(s.samples))
    out = {}
    for key, copies in grouped.items():
        samples = merge_copies(sorted(copies, key=len, reverse=True), cfg.interval_seconds)
        ts = [t for t, _ in samples]
        secs = durations(ts, cfg.interval_seconds, cfg.pinned_interval_seconds)
        steps = [(t, t + d, v) for (t, v), d in zip(samples, secs) if np.isfinite(v)]
        out[key] = ([a for a, _, _ in steps], steps)
    return out


NO_STEPS = ([], [])


def _value_at(steps: tuple[list[float], list[tuple[float, float, float]]], a: float, b: float) -> float | None:
    """The value of the step covering [a, b), if one does (an elementary interval lies inside one
    step or outside all: every step edge is a cut)."""
    starts, spans = steps
    i = bisect_right(starts, a) - 1
    if i >= 0:
        start, end, v = spans[i]
        if start <= a and b <= end:
            return v
    return None


def apply_hami(cfg: RollupConfig, window: Window, result: DeviceRollup, hami: Mapping[str, list[Series]]) -> None:
    """Split the hours of GPUs HAMi shares between their pods, in `result` (records replaced,
    warnings added). GPUs HAMi does not name are left as they are."""
    core = _steps(hami.get("hami_core", []),
                  lambda lb: (_device(lb), *_ns_pod(lb), _container(lb)) if _device(lb) and _ns_pod(lb)[0] else None,
                  cfg)
    if not core and not hami.get("hami_memory"):
        return
    memory = _steps(hami.get("hami_memory", []),
                    lambda lb: (_device(lb), *_ns_pod(lb), _container(lb)) if _device(lb) and _ns_pod(lb)[0] else None,
                    cfg)
    util = _steps(hami.get("hami_util", []),
                  lambda lb: (_device(lb), *_ns_pod(lb), _container(lb)) if _device(lb) and _ns_pod(lb)[0] else None,
                  cfg)
    in_use = _steps(hami.get("hami_memory_used", []),
                    lambda lb: (_device(lb), *_ns_pod(lb), _container(lb)) if _device(lb) and _ns_pod(lb)[0] else None,
                    cfg)
    gpu_cores = _steps(hami.get("hami_gpu_cores", []), lambda lb: (_device(lb),) if _device(lb) else None, cfg)
    gpu_memory = _steps(hami.get("hami_gpu_memory", []), lambda lb: (_device(lb),) if _device(lb) else None, cfg)

    by_device: dict[str, set] = defaultdict(set)
    for key in (*core, *memory):
        by_device[key[0]].add(key[1:])
    records: dict[tuple, list[UsageRecord]] = defaultdict(list)
    for rec in result.usage:
        records[(rec.device_key, rec.hour_start)].append(rec)
    missing = sorted(uuid for uuid in by_device if not any(k[0] == (uuid, "") for k in records))
    if missing:
        result.warnings.append(f"HAMi shares {len(missing)} GPU(s) dcgm-exporter does not report "
                               f"({', '.join(missing[:3])}): their shares are not counted")
    for uuid, holders in sorted(by_device.items()):
        hours = sorted(h for (key, h) in records if key == (uuid, ""))
        if not hours:
            continue
        _split_device(cfg, window, result, uuid, holders, hours, records, core, memory, util, in_use,
                      gpu_cores.get((uuid,), NO_STEPS), gpu_memory.get((uuid,), NO_STEPS))
    result.usage = [rec for recs in records.values() for rec in recs]


def _split_device(cfg, window, result, uuid, holders, hours, records, core, memory, util, in_use, gpu_cores,
                  gpu_memory):
    pods = sorted({(ns, pod) for ns, pod, _ctr in holders})
    ctrs = {p: sorted(c for ns, pod, c in holders if (ns, pod) == p) for p in pods}
    # The monitor names a container by name, the scheduler by index: utilization joins by pod.
    util_ctrs = {p: sorted(k[3] for k in util if k[:3] == (uuid, *p)) for p in pods}
    used_ctrs = {p: sorted(k[3] for k in in_use if k[:3] == (uuid, *p)) for p in pods}
    # Elementary intervals: every step edge of the device's series, the hours, the window.
    edges = {float(window.start), float(window.end)} | {float(h) for h in window.hours()}
    for p in pods:
        for c in ctrs[p]:
            for steps in (core, memory):
                for a, b, _ in steps.get((uuid, *p, c), NO_STEPS)[1]:
                    edges.update((a, b))
        for c in util_ctrs[p]:
            for a, b, _ in util[(uuid, *p, c)][1]:
                edges.update((a, b))
        for c in used_ctrs[p]:
            for a, b, _ in in_use[(uuid, *p, c)][1]:
                edges.update((a, b))
    for a, b, _ in (*gpu_cores[1], *gpu_memory[1]):
        edges.update((a, b))
    cuts = sorted(e for e in edges if window.start <= e <= window.end)
    held = defaultdict(float)           # (pod, hour) -> allocated seconds (HAMi's timeline)
    busy = defaultdict(float)           # (pod, hour) -> used seconds
    idle = defaultdict(float)
    seen = defaultdict(float)           # (pod, hour) -> seconds the pod held any share
    mem_area = defaultdict(float)       # (pod, hour) -> MiB × seconds of memory in use, while measured
    mem_time = defaultdict(float)
    mem_peak: dict = {}
    has_util = set()
    over_seconds, over_peak, over_from = 0.0, 0.0, None
    no_memory = False
    for a, b in zip(cuts, cuts[1:]):
        dt = b - a
        if dt <= 0:
            continue
        hour = hour_of(a)
        cores_total = _value_at(gpu_cores, a, b) or CORES_PER_GPU
        mem_total = _value_at(gpu_memory, a, b)
        shares, utils = {}, {}
        for p in pods:
            c_sum = m_sum = u_sum = 0.0
            present, u_seen = False, False
            for c in ctrs[p]:
                cv = _value_at(core.get((uuid, *p, c), NO_STEPS), a, b)
                mv = _value_at(memory.get((uuid, *p, c), NO_STEPS), a, b)
                if cv is not None or mv is not None:
                    present = True
                    c_sum += max(cv or 0.0, 0.0)
                    m_sum += max(mv or 0.0, 0.0)
            for c in util_ctrs[p]:
                uv = _value_at(util[(uuid, *p, c)], a, b)
                if uv is not None:
                    u_seen = True
                    u_sum += max(uv, 0.0)
            if not present:
                continue
            in_use_mib = [v for c in used_ctrs[p] if (v := _value_at(in_use[(uuid, *p, c)], a, b)) is not None]
            if in_use_mib:
                mib = sum(in_use_mib) / MIB
                mem_area[(p, hour)] += mib * dt
                mem_time[(p, hour)] += dt
                mem_peak[(p, hour)] = max(mem_peak.get((p, hour), mib), mib)
            if m_sum and not mem_total:
                no_memory = True
            share = max(c_sum / cores_total, m_sum / mem_total if mem_total else 0.0)
            shares[p] = min(share, 1.0)
            if u_seen:
                utils[p] = min(u_sum / 100.0, 1.0)
        total = sum(shares.values())
        scale = 1.0
        if total > 1.0 + 1e-9:
            scale = 1.0 / total
            over_seconds += dt
            over_peak = max(over_peak, total)
            over_from = a if over_from is None else over_from
        for p, share in shares.items():
            part = share * scale
            held[(p, hour)] += part * dt
            seen[(p, hour)] += dt
            if p in utils:
                has_util.add((p, hour))
                busy[(p, hour)] += utils[p] * dt
                if utils[p] < cfg.idle_threshold * part:
                    idle[(p, hour)] += part * dt
    if over_seconds:
        result.warnings.append(
            f"HAMi overcommitted GPU {uuid}: its pods' shares added up to {over_peak:.2f} GPUs for "
            f"{over_seconds:.0f} s from {datetime.fromtimestamp(over_from, timezone.utc):%Y-%m-%d %H:%M} UTC; each "
            f"share was scaled down in proportion to one GPU (docs/accounting.md, \"HAMi fractional GPUs\")")
    if no_memory:
        result.warnings.append(f"HAMi reports no memory size for GPU {uuid}: its pods' shares are their cores only")
    unmeasured = set()
    for hour in hours:
        recs = records[((uuid, ""), hour)]
        capacity = sum(r.gpu_seconds for r in recs)
        energy = [r.energy_joules for r in recs if r.energy_joules is not None]
        energy_total = sum(energy) if energy else None
        allocated = {p: held.get((p, hour), 0.0) for p in pods if held.get((p, hour), 0.0) > 0}
        if not allocated or capacity <= 0:
            continue
        # HAMi's timeline may cover instants dcgm-exporter's does not (a gap in its samples): the
        # GPU's own time bounds what its pods are allocated.
        fit = min(1.0, capacity / sum(allocated.values()))
        base = recs[0]
        out = []
        for (ns, pod), seconds in allocated.items():
            seconds *= fit
            used = busy[((ns, pod), hour)] * fit
            if ((ns, pod), hour) not in has_util:
                unmeasured.add((ns, pod))
            held_for = seen[((ns, pod), hour)] or HOUR_SECONDS
            rec = _record(base, ns, pod, seconds, used, idle[((ns, pod), hour)] * fit,
                          seconds / held_for, energy_total, capacity)
            if mem_time[((ns, pod), hour)]:     # the pod's own memory, as HAMi's monitor measures it
                rec.fb_used_mib_avg = mem_area[((ns, pod), hour)] / mem_time[((ns, pod), hour)]
                rec.fb_used_mib_max = mem_peak[((ns, pod), hour)]
            out.append(rec)
        free = capacity - sum(r.gpu_seconds for r in out)
        if free > 1e-6:     # unallocated capacity: no used seconds, as every unallocated row
            out.append(_record(base, "", "", free, 0.0, 0.0, 1.0, energy_total, capacity))
        records[((uuid, ""), hour)] = out
    if unmeasured:
        result.warnings.append(
            f"HAMi's monitor reports no utilization for {len(unmeasured)} pod(s) on GPU {uuid} "
            f"({', '.join(f'{ns}/{pod}' for ns, pod in sorted(unmeasured)[:3])}): their shares count as allocated, "
            f"none of it as used")


def _record(base: UsageRecord, ns: str, pod: str, seconds: float, used: float, idle: float, fraction: float,
            energy: float | None, capacity: float) -> UsageRecord:
    return UsageRecord(
        device_key=base.device_key, namespace=ns, pod=pod, hour_start=base.hour_start, node=base.node,
        gpu_model=base.gpu_model, mig_profile="", gpu_fraction=fraction, sample_count=base.sample_count,
        gpu_seconds=seconds, used_gpu_seconds=used, idle_gpu_seconds=min(idle, seconds),
        energy_joules=None if energy is None else energy * seconds / capacity,
        power_watts_avg=None if energy is None else energy / capacity,
    )
