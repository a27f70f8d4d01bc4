"""Device readings per hour: temperature, XID errors, and power → energy once per board.

Split from devices.py: rollup_devices calls device_health with the usage records it built,
so each record gets its share of the board's energy (docs/accounting.md "Power and energy").
"""
from __future__ import annotations

from collections import defaultdict

from apps.ingest.rollup.labels import canonical, device_identity
from apps.ingest.rollup.records import HOT_TEMPERATURE_C, HealthRecord, HourlySeries, _finite, hour_of
from .timeline import durations, merge_copies
from .timeline import priority as _priority


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
        merged = merge_copies([[(t, v) for t, v in m[1] if _finite(v)] for m in members], fallback)
        out[uuid] = (merged, durations([t for t, _ in merged], fallback, pinned))
    return out


def device_health(cfg, window, devices, accs, power, temperature, xid, fallback) -> list[HealthRecord]:
    """Device-level health and energy per hour, once per physical GPU (docs/accounting.md);
    also sets the usage records' (`accs`, from rollup_devices) share of the board's energy."""
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
