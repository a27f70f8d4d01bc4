"""Device samples → per (device, namespace, pod, hour) usage records and device health.

The counting rules are in docs/accounting.md; timeline.py holds how long a sample counts and
how copies of a stream (replicas, scrape jobs, per-pod copies) are told apart.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from typing import Iterable, Sequence

from apps.ingest.rollup.labels import canonical, device_identity, gpu_fraction, is_time_slice, names_the_exporter, workload_of
from apps.ingest.rollup.records import (HOUR_SECONDS, DeviceInfo, DeviceRollup, HourlySeries,
                      RollupConfig, Series, UsageRecord, Window, _finite, hour_of)
from .health import device_health
from .timeline import Coverage, durations, merge_copies, typical_spacing
from .timeline import priority as _priority


class _Acc:
    __slots__ = ("rec", "marks", "present")

    def __init__(self, rec):
        self.rec = rec
        self.marks = []     # (ts, seconds, idle?) with None for unknown utilization
        self.present = 0.0  # wall-clock seconds the record's samples stand for


class _Stream:
    """One logical stream: all copies of a device's series for one workload, merged."""
    __slots__ = ("key", "info", "namespace", "pod", "scale", "samples", "seconds", "sliced")

    def __init__(self, key, info, namespace, pod, scale, samples, sliced):
        self.key, self.info, self.namespace, self.pod = key, info, namespace, pod
        self.scale, self.samples, self.sliced = scale, samples, sliced
        self.seconds: list[float] = []


class _Workloads:
    """Which workload a series names, after the checks of docs/accounting.md
    ("The exporter's own namespace"); counts what it had to distrust."""

    def __init__(self, cfg: RollupConfig, candidates: set | None = None):
        self.cfg = cfg
        self.distrusted: dict[tuple[str, str], int] = {}
        # kube-state-metrics' requests are evidence only when they name some of the pods DCGM
        # names: a source that lists no running pod at all (pending ones only) proves nothing.
        self.gpu_pods = cfg.gpu_pods if cfg.gpu_pods and (candidates is None or candidates & cfg.gpu_pods) else None

    def of(self, labels) -> tuple[str, str]:
        cfg = self.cfg
        namespace, pod = workload_of(labels, cfg.spelling)
        if not namespace:
            return "", ""
        if names_the_exporter(labels, cfg.spelling) or (
                self.gpu_pods is not None and (namespace, pod) not in self.gpu_pods):
            self.distrusted[(namespace, pod)] = self.distrusted.get((namespace, pod), 0) + 1
            return "", ""
        return namespace, pod

    def warnings(self) -> list[str]:
        if not self.distrusted:
            return []
        names = ", ".join(f"{ns}/{pod}" for ns, pod in sorted(self.distrusted)[:5])
        more = len(self.distrusted) - 5
        return [f"{sum(self.distrusted.values())} series named a pod that requested no GPU or is the exporter "
                f"itself ({names}{f' and {more} more' if more > 0 else ''}): counted as unallocated"]


def rollup_devices(
    cfg: RollupConfig,
    window: Window,
    whole_util: Iterable[Series],
    mig_util: Iterable[Series],
    fb_used: Iterable[Series] = (),
    power: Iterable[Series] = (),
    temperature: Iterable[Series] = (),
    xid: Iterable[Series] = (),
) -> DeviceRollup:
    """Usage records of the samples with timestamps in `window`; the series may reach beyond it
    (the lookaround that tells how long the window's samples count)."""
    warnings: list[str] = []
    devices: dict[tuple[str, str], dict] = {}
    whole_util, mig_util = list(whole_util), list(mig_util)
    candidates = {workload_of(s.labels, cfg.spelling) for s in (*whole_util, *mig_util)} if cfg.gpu_pods else None
    workloads = _Workloads(cfg, candidates)

    def note_device(key, info, ts_first, ts_last):
        d = devices.get(key)
        if d is None:
            frac, warn = gpu_fraction(info["model_name"], info["mig_profile"], cfg.mig_slices_overrides)
            if warn and warn not in warnings:
                warnings.append(warn)
            d = devices[key] = dict(info, gpu_fraction=frac, first_seen=ts_first, last_seen=ts_last)
        else:
            d["first_seen"] = min(d["first_seen"], ts_first)
            d["last_seen"] = max(d["last_seen"], ts_last)
        return d

    # ---- which series count: MIG instances through GR_ENGINE_ACTIVE, whole GPUs through GPU_UTIL
    chosen = []  # (labels, series, scale)
    mig_uuids = set()
    for s in mig_util:
        labels = canonical(s.labels)
        if not labels.get("GPU_I_PROFILE"):
            continue
        key, _ = device_identity(labels)
        mig_uuids.add(key[0])
        chosen.append((labels, s, cfg.mig_util_scale))
    dropped_parents = set()
    for s in whole_util:
        labels = canonical(s.labels)
        if labels.get("GPU_I_PROFILE"):
            continue
        key, _ = device_identity(labels)
        if key[0] in mig_uuids:
            # A MIG-mode GPU is accounted through its instances; its parent would count twice.
            dropped_parents.add(key[0])
            continue
        chosen.append((labels, s, cfg.util_scale))
    if dropped_parents:
        warnings.append(f"ignored whole-GPU utilization of {len(dropped_parents)} GPU(s) in MIG mode")

    # ---- copies of one stream (replicas, scrape jobs, exporter restarts) merged into one
    groups: dict[tuple, list] = defaultdict(list)
    for labels, s, scale in chosen:
        key, info = device_identity(labels)
        namespace, pod = workloads.of(labels)
        sliced = is_time_slice(labels) and bool(namespace)
        groups[(key, namespace, pod, sliced)].append((_priority(labels, cfg.replica_labels), labels, s, scale, info))
    streams: list[_Stream] = []
    raw_in_window = 0
    for (key, namespace, pod, sliced), members in groups.items():
        members.sort(key=lambda m: m[0])
        for m in members:
            raw_in_window += sum(1 for ts, _ in m[2].samples if window.contains(ts))
        merged = merge_copies([list(m[2].samples) for m in members], cfg.interval_seconds)
        streams.append(_Stream(key, members[0][4], namespace, pod, members[0][3], merged, sliced))
    fallback = typical_spacing([[t for t, _ in st.samples] for st in streams]) or cfg.interval_seconds
    for st in streams:
        st.seconds = durations([t for t, _ in st.samples], fallback, cfg.pinned_interval_seconds)

    by_device: dict[tuple, list[_Stream]] = defaultdict(list)
    for st in streams:
        by_device[st.key].append(st)

    accs: dict[tuple, _Acc] = {}
    clamped = 0
    counted = 0

    def account(st: _Stream, d: dict, ts, seconds, value, share, used_share):
        nonlocal clamped, counted
        counted += 1
        fraction = d["gpu_fraction"]
        hour = hour_of(ts)
        acc_key = (st.key, st.namespace, st.pod, hour)
        acc = accs.get(acc_key)
        if acc is None:
            acc = accs[acc_key] = _Acc(UsageRecord(
                device_key=st.key, namespace=st.namespace, pod=st.pod, hour_start=hour, node=d["host"],
                gpu_model=d["model_name"], mig_profile=d["mig_profile"], gpu_fraction=fraction,
            ))
        rec = acc.rec
        rec.sample_count += 1
        rec.gpu_seconds += seconds * share
        acc.present += seconds
        if d["mig_profile"]:
            rec.mig_seconds += seconds * (share / fraction)
        if not st.namespace:
            return
        if _finite(value):
            util = value * st.scale
            if util < 0.0 or util > 1.0:
                clamped += 1
                util = min(1.0, max(0.0, util))
            rec.used_gpu_seconds += seconds * used_share * util
            idle = util < cfg.idle_threshold
            if idle:
                rec.idle_gpu_seconds += seconds * share
            acc.marks.append((ts, seconds, idle))
        else:
            rec.unknown_util_samples += 1
            acc.marks.append((ts, seconds, None))

    for key, dev_streams in by_device.items():
        in_window = [st for st in dev_streams if any(window.contains(t) for t, _ in st.samples)]
        if not in_window:
            continue
        firsts = [t for st in in_window for t, _ in st.samples if window.contains(t)]
        d = note_device(key, in_window[0].info, min(firsts), max(firsts))
        fraction = d["gpu_fraction"]
        pods = [st for st in dev_streams if st.sliced]
        plain = [st for st in dev_streams if not st.sliced]
        holders = _SliceHolders(pods)
        own = _own_values(cfg.time_slicing, pods, plain) if pods else False
        for st in pods:
            for (ts, value), seconds in zip(st.samples, st.seconds):
                if not window.contains(ts):
                    continue
                n = holders.count(ts)
                share = fraction / n
                account(st, d, ts, seconds, value, share, fraction if own else share)
        # Whole-device streams: tiled, the workloads' first, so every instant counts once.
        plain.sort(key=lambda st: (not st.namespace, st.namespace, st.pod))
        coverage = Coverage() if len(plain) > 1 else None
        for st in plain:
            spans = [(t, t + sec) for (t, _), sec in zip(st.samples, st.seconds)]
            free = coverage.claim(spans) if coverage is not None else [b - a for a, b in spans]
            for (ts, value), seconds in zip(st.samples, free):
                if not window.contains(ts) or seconds <= 1e-9:
                    continue
                if pods and holders.count(ts):
                    continue  # the device series of a time-sliced GPU: its pods hold it
                account(st, d, ts, seconds, value, fraction, fraction)

    if clamped:
        warnings.append(f"{clamped} utilization sample(s) outside 0-100 % were clamped")
    unknown = sum(a.rec.unknown_util_samples for a in accs.values())
    if unknown:
        warnings.append(f"{unknown} utilization sample(s) were NaN/Inf: counted as allocated, not as used or idle")
    warnings.extend(workloads.warnings())

    for acc in accs.values():
        if acc.rec.namespace:
            _idle_runs(acc)

    _attach_memory(cfg, window, accs, fb_used, workloads)
    health = device_health(cfg, window, devices, accs, power, temperature, xid, fallback)

    device_infos = {k: DeviceInfo(**v) for k, v in devices.items()}
    return DeviceRollup(
        usage=[a.rec for a in accs.values()], devices=device_infos, health=health,
        warnings=warnings, samples_read=raw_in_window, duplicates=max(0, raw_in_window - counted),
    )


class _SliceHolders:
    """How many pods hold a time-sliced GPU at an instant (each pod stream covers its samples'
    spans)."""

    def __init__(self, pods: Sequence[_Stream]):
        self.spans = [([t for t, _ in st.samples], st.seconds) for st in pods]

    def count(self, ts: float) -> int:
        n = 0
        for times, seconds in self.spans:
            i = bisect_right(times, ts) - 1
            if i >= 0 and ts < times[i] + seconds[i]:
                n += 1
        return n


def _own_values(mode: str, pods: Sequence[_Stream], plain: Sequence[_Stream]) -> bool:
    """Whether a time-sliced GPU's per-pod series hold each pod's own utilization (dcgm-exporter
    4.5.3+) rather than copies of the device's (4.4-4.5.2): docs/accounting.md."""
    if mode in ("own", "copies"):
        return mode == "own"
    at: dict[float, list[float]] = defaultdict(list)
    for st in pods:
        for ts, v in st.samples:
            if _finite(v):
                at[ts].append(v)
    for st in plain:
        for ts, v in st.samples:
            if ts in at and _finite(v):
                at[ts].append(v)
    return any(max(vs) - min(vs) > 1e-9 for vs in at.values() if len(vs) > 1)


def _idle_runs(acc: _Acc) -> None:
    """Idle stretches within the hour, joinable with the neighbouring hours' stretches."""
    rec = acc.rec
    marks = sorted(acc.marks)
    if not marks:
        return
    hour_end = rec.hour_start + HOUR_SECONDS
    runs = []  # [first index, last index, seconds]
    current = None
    previous_end = None
    for i, (ts, seconds, idle) in enumerate(marks):
        contiguous = previous_end is not None and ts - previous_end <= 0.5 * seconds + 1e-6
        if idle:
            if current is None or not contiguous:
                if current is not None:
                    runs.append(current)
                current = [i, i, 0.0]
            current[1] = i
            current[2] += seconds
        elif current is not None:
            runs.append(current)
            current = None
        previous_end = ts + seconds
    if current is not None:
        runs.append(current)
    lengths = [r[2] for r in runs]
    rec.idle_max_run_seconds = max(lengths, default=0.0)
    first_ts, first_seconds = marks[0][0], marks[0][1]
    if runs and runs[0][0] == 0 and first_ts - rec.hour_start <= first_seconds + 1e-6:
        rec.idle_prefix_seconds = lengths[0]
    last_ts, last_seconds = marks[-1][0], marks[-1][1]
    if runs and runs[-1][1] == len(marks) - 1 and hour_end - (last_ts + last_seconds) <= 0.5 * last_seconds + 1e-6:
        rec.idle_suffix_seconds = lengths[-1]
    rec.idle_whole_hour = (
        len(runs) == 1 and rec.idle_prefix_seconds > 0 and rec.idle_suffix_seconds > 0
        and runs[0][0] == 0 and runs[0][1] == len(marks) - 1
    )


def _attach_memory(cfg, window, accs, fb_used, workloads: _Workloads):
    """Memory per (device, pod, hour), joined on the utilization rows' keys (a reading: copies
    of one value average to that value)."""
    sums: dict[tuple, list] = defaultdict(lambda: [0.0, 0, None])
    scale = cfg.fb_scale
    for s in fb_used:
        labels = canonical(s.labels)
        key, _ = device_identity(labels)
        namespace, pod = workloads.of(labels)
        if isinstance(s, HourlySeries):
            for hour, total, count, peak in s.hours:
                if count and window.contains(hour):
                    agg = sums[(key, namespace, pod, hour)]
                    agg[0] += total * scale
                    agg[1] += count
                    agg[2] = peak * scale if agg[2] is None else max(agg[2], peak * scale)
            continue
        for ts, v in s.samples:
            if not window.contains(ts) or not _finite(v):
                continue
            v *= scale
            agg = sums[(key, namespace, pod, hour_of(ts))]
            agg[0] += v
            agg[1] += 1
            agg[2] = v if agg[2] is None else max(agg[2], v)
    for acc_key, (total, count, peak) in sums.items():
        acc = accs.get(acc_key)
        if acc is None or not count:
            continue
        acc.rec.fb_used_mib_avg = total / count
        acc.rec.fb_used_mib_max = peak
