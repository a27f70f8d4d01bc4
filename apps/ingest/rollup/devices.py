"""Device samples → per (device, namespace, pod, hour) usage records and device health."""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Iterable

from apps.accounting.figures import longest_idle_seconds as merge_idle_runs  # noqa: F401 — the one join

from .labels import device_identity, gpu_fraction, is_time_slice, workload_of
from .records import (HOT_TEMPERATURE_C, HOUR_SECONDS, DeviceInfo, DeviceRollup, HealthRecord, HourlySeries,
                      RollupConfig, Series, UsageRecord, Window, _finite, hour_of)


class _Acc:
    __slots__ = ("rec", "marks")

    def __init__(self, rec):
        self.rec = rec
        self.marks = []  # (ts, idle?) with None for unknown utilization


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
    interval = cfg.interval_seconds
    warnings: list[str] = []
    devices: dict[tuple[str, str], dict] = {}
    samples_read = 0

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

    util_series = []  # (series, key, scale)
    mig_uuids = set()
    for s in mig_util:
        if not s.labels.get("GPU_I_PROFILE"):
            continue
        key, _ = device_identity(s.labels)
        mig_uuids.add(key[0])
        util_series.append((s, cfg.mig_util_scale))
    dropped_parents = set()
    for s in whole_util:
        if s.labels.get("GPU_I_PROFILE"):
            continue
        key, _ = device_identity(s.labels)
        if key[0] in mig_uuids:
            # A MIG-mode GPU is accounted through its instances; its parent would count twice.
            dropped_parents.add(key[0])
            continue
        util_series.append((s, cfg.util_scale))
    if dropped_parents:
        warnings.append(f"ignored whole-GPU utilization of {len(dropped_parents)} GPU(s) in MIG mode")

    # Time-slicing: per device and timestamp, how many per-pod copies share the device.
    slice_counts: dict[tuple[str, str], dict[float, int]] = defaultdict(lambda: defaultdict(int))
    for s, _ in util_series:
        if is_time_slice(s.labels) and workload_of(s.labels, cfg.spelling)[0]:
            key, _ = device_identity(s.labels)
            counts = slice_counts[key]
            for ts, _v in s.samples:
                if window.contains(ts):
                    counts[ts] += 1

    # Two scrape jobs on one exporter give every device twice; a device has one sample per
    # instant (time-sliced copies aside). Series naming a pod go first, then a fixed order.
    util_series.sort(key=lambda item: (not workload_of(item[0].labels, cfg.spelling)[0],
                                       sorted(item[0].labels.items())))
    seen_instants: dict[tuple[str, str], set] = defaultdict(set)
    duplicates = 0
    accs: dict[tuple, _Acc] = {}
    clamped = 0
    for s, scale in util_series:
        key, info = device_identity(s.labels)
        samples = [(ts, v) for ts, v in s.samples if window.contains(ts)]
        if not is_time_slice(s.labels):
            seen = seen_instants[key]
            fresh = [(ts, v) for ts, v in samples if ts not in seen]
            duplicates += len(samples) - len(fresh)
            seen.update(ts for ts, _ in fresh)
            samples = fresh
        samples_read += len(samples)
        if not samples:
            continue
        d = note_device(key, info, samples[0][0], samples[-1][0])
        fraction = d["gpu_fraction"]
        is_mig = bool(d["mig_profile"])
        sliced = is_time_slice(s.labels)
        namespace, pod = workload_of(s.labels, cfg.spelling)
        if sliced and not namespace:
            continue
        counts = slice_counts.get(key)
        for ts, value in samples:
            if sliced:
                share = fraction / counts[ts]
            elif counts and ts in counts:
                continue  # the device series of a time-sliced GPU: its pods already hold it
            else:
                share = fraction
            hour = hour_of(ts)
            acc_key = (key, namespace, pod, hour)
            acc = accs.get(acc_key)
            if acc is None:
                acc = accs[acc_key] = _Acc(UsageRecord(
                    device_key=key, namespace=namespace, pod=pod, hour_start=hour, node=d["host"],
                    gpu_model=d["model_name"], mig_profile=d["mig_profile"], gpu_fraction=fraction,
                ))
            rec = acc.rec
            rec.sample_count += 1
            rec.gpu_seconds += interval * share
            if is_mig:
                rec.mig_seconds += interval * (share / fraction)
            if not namespace:
                continue
            if _finite(value):
                util = value * scale
                if util < 0.0 or util > 1.0:
                    clamped += 1
                    util = min(1.0, max(0.0, util))
                rec.used_gpu_seconds += interval * share * util
                idle = util < cfg.idle_threshold
                if idle:
                    rec.idle_gpu_seconds += interval * share
                acc.marks.append((ts, idle))
            else:
                rec.unknown_util_samples += 1
                acc.marks.append((ts, None))
    if clamped:
        warnings.append(f"{clamped} utilization sample(s) outside 0-100 % were clamped")
    if duplicates:
        warnings.append(f"{duplicates} duplicate utilization sample(s) (the same device at the same instant in "
                        "several series, e.g. scraped by two jobs) were counted once")
    unknown = sum(a.rec.unknown_util_samples for a in accs.values())
    if unknown:
        warnings.append(f"{unknown} utilization sample(s) were NaN/Inf: counted as allocated, not as used or idle")

    for acc in accs.values():
        if acc.rec.namespace:
            _idle_runs(acc, interval)

    _attach_summaries(cfg, window, accs, fb_used, power)
    health = _health(cfg, window, devices, temperature, power, xid)

    device_infos = {k: DeviceInfo(**v) for k, v in devices.items()}
    return DeviceRollup(
        usage=[a.rec for a in accs.values()], devices=device_infos, health=health,
        warnings=warnings, samples_read=samples_read,
    )


def _idle_runs(acc: _Acc, interval: float) -> None:
    """Idle stretches within the hour, joinable with the neighbouring hours' stretches."""
    rec = acc.rec
    marks = sorted(acc.marks)
    if not marks:
        return
    gap = 1.5 * interval
    hour_end = rec.hour_start + HOUR_SECONDS
    runs = []  # (first_index, last_index)
    run_start = None
    for i, (ts, idle) in enumerate(marks):
        contiguous = i > 0 and ts - marks[i - 1][0] <= gap
        if idle:
            if run_start is None or not contiguous:
                if run_start is not None:
                    runs.append((run_start, i - 1))
                run_start = i
        elif run_start is not None:
            runs.append((run_start, i - 1))
            run_start = None
    if run_start is not None:
        runs.append((run_start, len(marks) - 1))
    lengths = [(b - a + 1) * interval for a, b in runs]
    rec.idle_max_run_seconds = max(lengths, default=0.0)
    if runs and runs[0][0] == 0 and marks[0][0] - rec.hour_start < gap:
        rec.idle_prefix_seconds = lengths[0]
    if runs and runs[-1][1] == len(marks) - 1 and hour_end - marks[-1][0] <= gap:
        rec.idle_suffix_seconds = lengths[-1]
    rec.idle_whole_hour = (
        len(runs) == 1 and rec.idle_prefix_seconds > 0 and rec.idle_suffix_seconds > 0
        and runs[0] == (0, len(marks) - 1)
    )


def _attach_summaries(cfg, window, accs, fb_used, power):
    """Memory and power per (device, pod, hour), joined on the utilization rows' keys."""
    for series_list, scale, kind in ((fb_used, cfg.fb_scale, "fb"), (power, cfg.power_scale, "power")):
        sums: dict[tuple, list] = defaultdict(lambda: [0.0, 0, None])
        for s in series_list:
            if is_time_slice(s.labels):
                continue
            key, _ = device_identity(s.labels)
            namespace, pod = workload_of(s.labels, cfg.spelling)
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
            if kind == "fb":
                acc.rec.fb_used_mib_avg = total / count
                acc.rec.fb_used_mib_max = peak
            else:
                acc.rec.power_watts_avg = total / count
                acc.rec.energy_joules = total * cfg.interval_seconds


def _health(cfg, window, devices, temperature, power, xid) -> list[HealthRecord]:
    """Device-level health per hour; per-pod copies of a time-sliced GPU are read once."""
    records: dict[tuple, HealthRecord] = {}
    seen: set = set()

    def rec_for(key, hour):
        r = records.get((key, hour))
        if r is None:
            r = records[(key, hour)] = HealthRecord(device_key=key, hour_start=hour)
        return r

    def samples_of(series_list, scale, kind):
        """(key, ts, value) once per device and timestamp (a device's series may overlap)."""
        keyed = []
        for s in series_list:
            if is_time_slice(s.labels) or isinstance(s, HourlySeries):
                continue
            key, _ = device_identity(s.labels)
            if key in devices:
                keyed.append((key, s))
        per_device = Counter(key for key, _ in keyed)
        lo, hi = window.start, window.end
        for key, s in keyed:
            shared = per_device[key] > 1
            for ts, v in s.samples:
                if lo <= ts < hi and v == v and v not in (math.inf, -math.inf):
                    if kind == "x" and v == 0:
                        continue
                    if shared:
                        if (key, ts, kind) in seen:
                            continue
                        seen.add((key, ts, kind))
                    yield key, ts, v * scale

    temps: dict[tuple, list] = defaultdict(lambda: [0.0, 0, None, 0])   # sum, count, max, samples above 83 °C
    for key, ts, v in samples_of(temperature, cfg.temperature_scale, "t"):
        acc = temps[(key, hour_of(ts))]
        acc[0] += v
        acc[1] += 1
        acc[2] = v if acc[2] is None else max(acc[2], v)
        acc[3] += v > HOT_TEMPERATURE_C
    # hourly from Prometheus: only series that never exceeded 83 °C come so
    for key, hour, total, count, peak in _prometheus_hours(temperature, devices, window, cfg.temperature_scale):
        acc = temps[(key, hour)]
        acc[0] += total
        acc[1] += count
        acc[2] = peak if acc[2] is None else max(acc[2], peak)
        acc[3] += 0 if peak <= HOT_TEMPERATURE_C else count  # never: hot ones are raw
    for (key, hour), (total, count, peak, above) in temps.items():
        r = rec_for(key, hour)
        r.temperature_c_avg = total / count
        r.temperature_c_max = peak
        r.seconds_above_83c = above * cfg.interval_seconds

    watts: dict[tuple, list] = defaultdict(lambda: [0.0, 0])
    for key, ts, v in samples_of(power, cfg.power_scale, "p"):
        acc = watts[(key, hour_of(ts))]
        acc[0] += v
        acc[1] += 1
    # hourly sums from Prometheus: a device's series never share a timestamp
    for key, hour, total, count, _peak in _prometheus_hours(power, devices, window, cfg.power_scale):
        acc = watts[(key, hour)]
        acc[0] += total
        acc[1] += count
    for (key, hour), (total, count) in watts.items():
        r = rec_for(key, hour)
        r.power_watts_avg = total / count
        r.energy_joules = total * cfg.interval_seconds

    for key, ts, v in samples_of(xid, 1.0, "x"):
        if v == 0:
            continue
        r = rec_for(key, hour_of(ts))
        r.xid_samples += 1
        code = int(v)
        if code not in r.xid_codes:
            r.xid_codes.append(code)
    return list(records.values())


def _prometheus_hours(series_list, devices, window, scale):
    """(device key, hour, sum, count, max) of the hours Prometheus summed, in canonical units."""
    for s in series_list:
        if not isinstance(s, HourlySeries) or is_time_slice(s.labels):
            continue
        key, _ = device_identity(s.labels)
        if key not in devices:
            continue
        for hour, total, count, peak in s.hours:
            if count and window.contains(hour):
                yield key, hour, total * scale, count, peak * scale

