"""Device samples → per (device, namespace, pod, hour) usage records and device health.

The counting rules are in docs/accounting.md; timeline.py holds how long a sample counts and
how copies of a stream (replicas, scrape jobs, per-pod copies) are told apart.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from typing import Iterable, Sequence

from apps.accounting.figures import longest_idle_seconds as merge_idle_runs  # noqa: F401 — the one join

from .labels import canonical, device_identity, gpu_fraction, is_time_slice, names_the_exporter, workload_of
from .records import (HOT_TEMPERATURE_C, HOUR_SECONDS, DeviceInfo, DeviceRollup, HealthRecord, HourlySeries,
                      RollupConfig, Series, UsageRecord, Window, _finite, hour_of)
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
        merged = merge_copies([list(m[2].samples) for m in members])
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
    health = _health(cfg, window, devices, accs, power, temperature, xid, fallback)

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


def _board_streams(series_list, replica_labels, fallback, pinned, per_board=True):
    """Device readings (power, temperature, XID) as one stream per physical GPU (`per_board`)
    or per device (GPU or MIG instance).

    dcgm-exporter repeats the board's power on every MIG instance of a GPU, the device's
    readings on every per-pod copy of a time-sliced GPU, and Prometheus replicas repeat those
    again: all are copies of one reading, merged (docs/accounting.md "Power and energy").
    Returns {uuid or device key: (samples, seconds)}.
    """
    by_uuid: dict = defaultdict(list)
    for s in series_list:
        if isinstance(s, HourlySeries):
            continue
        labels = canonical(s.labels)
        key, _ = device_identity(labels)
        # the device-level series first, then instance and per-pod copies, in a fixed order
        rank = (bool(labels.get("vgpu")), bool(labels.get("GPU_I_PROFILE")), _priority(labels, replica_labels))
        by_uuid[key[0] if per_board else key].append((rank, s.samples))
    out = {}
    for uuid, members in by_uuid.items():
        members.sort(key=lambda m: m[0])
        merged = merge_copies([[(t, v) for t, v in m[1] if _finite(v)] for m in members])
        out[uuid] = (merged, durations([t for t, _ in merged], fallback, pinned))
    return out


def _health(cfg, window, devices, accs, power, temperature, xid, fallback) -> list[HealthRecord]:
    """Device-level health and energy per hour, once per physical GPU (docs/accounting.md)."""
    records: dict[tuple, HealthRecord] = {}
    keys_of: dict[str, list] = defaultdict(list)
    for key in devices:
        keys_of[key[0]].append(key)

    def rec_for(key, hour):
        r = records.get((key, hour))
        if r is None:
            r = records[(key, hour)] = HealthRecord(device_key=key, hour_start=hour)
        return r

    pinned = cfg.pinned_interval_seconds
    # Temperature: a reading, the same on every copy; raw where a series ran hot.
    temps: dict[tuple, list] = defaultdict(lambda: [0.0, 0, None, 0.0])   # sum, count, max, seconds above 83 °C
    for key, (samples, seconds) in _board_streams(temperature, cfg.replica_labels, fallback, pinned, False).items():
        for (ts, v), sec in zip(samples, seconds):
            if not window.contains(ts):
                continue
            v *= cfg.temperature_scale
            acc = temps[(key, hour_of(ts))]
            acc[0] += v
            acc[1] += 1
            acc[2] = v if acc[2] is None else max(acc[2], v)
            if v > HOT_TEMPERATURE_C:
                acc[3] += sec
    for key, hour, total, count, peak in _prometheus_hours(temperature, window, cfg.temperature_scale, False):
        acc = temps[(key, hour)]
        acc[0] += total
        acc[1] += count
        acc[2] = peak if acc[2] is None else max(acc[2], peak)
    for (key, hour), (total, count, peak, above) in temps.items():
        if key in devices:
            r = rec_for(key, hour)
            r.temperature_c_avg = total / count
            r.temperature_c_max = peak
            r.seconds_above_83c = above

    # Power: energy is additive, so the board's joules are counted once and shared among the
    # MIG instances (and pods) by their GPU-seconds in the hour.
    board: dict[tuple, list] = defaultdict(lambda: [0.0, 0.0])   # joules, seconds covered
    for uuid, (samples, seconds) in _board_streams(power, cfg.replica_labels, fallback, pinned).items():
        for (ts, v), sec in zip(samples, seconds):
            if window.contains(ts):
                acc = board[(uuid, hour_of(ts))]
                acc[0] += v * cfg.power_scale * sec
                acc[1] += sec
    for uuid, hour, total, count, _peak in _prometheus_hours(power, window, cfg.power_scale):
        acc = board[(uuid, hour)]   # per-hour sums: only when raw power was not read (old callers)
        acc[0] += total * fallback
        acc[1] += count * fallback
    usage_by_board: dict[tuple, list] = defaultdict(list)
    for acc in accs.values():
        usage_by_board[(acc.rec.device_key[0], acc.rec.hour_start)].append(acc)
    for (uuid, hour), (joules, covered) in board.items():
        if covered <= 0:
            continue
        holders = usage_by_board.get((uuid, hour), [])
        weight = sum(a.rec.gpu_seconds for a in holders)
        for a in holders:
            a.rec.energy_joules = joules * a.rec.gpu_seconds / weight if weight else 0.0
            a.rec.power_watts_avg = a.rec.energy_joules / a.present if a.present else None
        keys = keys_of.get(uuid, ())
        per_key: dict[tuple, float] = defaultdict(float)
        for a in holders:
            per_key[a.rec.device_key] += a.rec.gpu_seconds
        total_weight = sum(per_key.values())
        for key in keys:
            share = (per_key[key] / total_weight) if total_weight else 1.0 / len(keys)
            r = rec_for(key, hour)
            r.energy_joules = joules * share
            r.power_watts_avg = joules * share / covered

    for key, (samples, _seconds) in _board_streams(xid, cfg.replica_labels, fallback, pinned, False).items():
        if key not in devices:
            continue
        for ts, v in samples:
            if not window.contains(ts) or v == 0:
                continue
            r = rec_for(key, hour_of(ts))
            r.xid_samples += 1
            code = int(v)
            if code not in r.xid_codes:
                r.xid_codes.append(code)
    return list(records.values())


_POD_LABELS = ("namespace", "pod", "exported_namespace", "exported_pod", "pod_namespace", "pod_name")


def _prometheus_hours(series_list, window, scale, per_board=True):
    """(uuid or device key, hour, sum, count, max) of the hours Prometheus summed, in canonical
    units. Copies of one reading (replicas, scrape jobs: same pod labels) count once, by the
    copy with the most samples; a device's successive series (one per holding pod) add up; the
    per-pod copies of a time-sliced GPU count only where no device-level series exists."""
    best: dict[tuple, tuple] = {}
    for s in series_list:
        if not isinstance(s, HourlySeries):
            continue
        labels = canonical(s.labels)
        key, _ = device_identity(labels)
        ident = key[0] if per_board else key
        sliced = bool(labels.get("vgpu"))
        holder = () if sliced else tuple(labels.get(n, "") for n in _POD_LABELS)
        for hour, total, count, peak in s.hours:
            if count and window.contains(hour):
                slot = (ident, hour, sliced, holder)
                seen = best.get(slot)
                if seen is None or count > seen[1]:
                    best[slot] = (total * scale, count, peak * scale)
    combined: dict[tuple, list] = {}
    for (ident, hour, sliced, _holder), (total, count, peak) in sorted(best.items(), key=lambda kv: kv[0][2]):
        acc = combined.get((ident, hour))
        if acc is None:
            combined[(ident, hour)] = [total, count, peak, sliced]
        elif not sliced:
            acc[0] += total
            acc[1] += count
            acc[2] = max(acc[2], peak)
    for (ident, hour), (total, count, peak, _sliced) in combined.items():
        yield ident, hour, total, count, peak
