"""Device readings per hour: temperature, XID errors, and power → energy once per board.

Split from devices.py: rollup_devices calls device_health with the usage records it built,
so each record gets its share of the board's energy (docs/accounting.md "Power and energy").
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from .labels import canonical, device_key
from .arrays import first_maxima, hour_slots, joined_columns, sequential_sums, stream_columns
from .records import HOT_TEMPERATURE_C, HealthRecord, HourlySeries, hour_of
from .copies import merge_copy_columns, spaced_merges
from .copies import priority as _priority
from .timeline import StreamGaps


def _board_streams(series_list, replica_labels, fallback, pinned, per_board=True):
    """Device readings (power, temperature, XID) as one stream per physical GPU (`per_board`)
    or per device (GPU or MIG instance).

    dcgm-exporter repeats the board's power on every MIG instance of a GPU, the device's
    readings on every per-pod copy of a time-sliced GPU, and Prometheus replicas repeat those
    again: all are copies of one reading, merged (docs/accounting.md "Power and energy").
    Returns {uuid or device key: (timestamps, values, seconds)}, three float arrays.
    """
    by_uuid: dict = defaultdict(list)
    raw = [s for s in series_list if not isinstance(s, HourlySeries)]
    ts_all, vs_all, offsets = stream_columns([s.samples for s in raw])
    finite = np.isfinite(vs_all)
    # the finite readings of every series, in one set of arrays
    kept_before = np.concatenate([[0], np.cumsum(finite)])
    ts_f, vs_f, offs = ts_all[finite], vs_all[finite], kept_before[offsets]
    labels_of = []
    for k, s in enumerate(raw):
        labels = canonical(s.labels)
        key = device_key(labels)
        labels_of.append(labels)
        by_uuid[key[0] if per_board else key].append(k)
    members_of = list(by_uuid.values())
    spaced = spaced_merges(ts_f, vs_f, offs, members_of, fallback)
    bounds = offs.tolist()
    merged = {}
    for g, (uuid, members) in enumerate(by_uuid.items()):
        if len(members) == 1:
            k = members[0]
            merged[uuid] = (ts_f[bounds[k]:bounds[k + 1]], vs_f[bounds[k]:bounds[k + 1]])
        elif g in spaced:
            merged[uuid] = spaced[g]
        else:
            # the device-level series first, then instance and per-pod copies, in a fixed order
            members = sorted(members, key=lambda k: (bool(labels_of[k].get("vgpu")),
                                                     bool(labels_of[k].get("GPU_I_PROFILE")),
                                                     _priority(labels_of[k], replica_labels)))
            merged[uuid] = merge_copy_columns([(ts_f[bounds[k]:bounds[k + 1]], vs_f[bounds[k]:bounds[k + 1]])
                                               for k in members], fallback)
    # the merged streams' durations, all at once (the same floats as durations() of each)
    ts_m, _, offs = joined_columns(list(merged.values()))
    seconds = StreamGaps(ts_m, offs).durations(fallback, pinned)
    return {uuid: (ts, vs, sec) for (uuid, (ts, vs)), sec in zip(merged.items(), seconds)}


def device_health(cfg, window, devices, accs, power, temperature, xid, fallback) -> list[HealthRecord]:
    """Device-level health and energy per hour, once per physical GPU (docs/accounting.md);
    also sets the usage records' (`accs`, from rollup_devices) share of the board's energy."""
    records = _Records()
    _temperatures(records, cfg, window, devices, temperature, fallback)
    _energy(records, cfg, window, devices, accs, power, fallback)
    _xid_errors(records, cfg, window, devices, xid, fallback)
    return list(records.values())


class _Records(dict):
    """{(device key, hour): HealthRecord}, each made the first time it is asked for."""

    def at(self, key, hour) -> HealthRecord:
        r = self.get((key, hour))
        if r is None:
            r = self[(key, hour)] = HealthRecord(device_key=key, hour_start=hour)
        return r


def _temperatures(records: _Records, cfg, window, devices, temperature, fallback) -> None:
    """Temperature: a reading, the same on every copy; raw where a series ran hot. Per device and
    hour: the sum, count and maximum of its (merged) readings in the hour, and the seconds of
    those above 83 °C, all the chunk's streams at once (`sequential_sums`: the floats the
    per-sample loop of tests/rollup_oracle/health.py gives); then Prometheus' per-hour sums."""
    temps: dict[tuple, list] = {}   # (key, hour) → [sum, count, max, seconds above 83 °C], first seen first
    streams = _board_streams(temperature, cfg.replica_labels, fallback, cfg.pinned_interval_seconds, False)
    slots, values, seconds = _hour_slots(streams, window, cfg.temperature_scale)
    if slots:
        g = np.concatenate(values[0])
        v, sec = np.concatenate(values[1]), np.concatenate(seconds)
        n = len(slots)
        sums = sequential_sums(g, np.vstack([v, np.where(v > HOT_TEMPERATURE_C, sec, 0.0)]), n)
        counts = np.bincount(g, minlength=n)
        peaks = first_maxima(g, v, n)   # as max() keeps it, reading by reading
        for slot, i in slots.items():
            temps[slot] = [float(sums[0, i]), int(counts[i]), float(peaks[i]), float(sums[1, i])]
    for key, hour, total, count, peak in _prometheus_hours(temperature, window, cfg.temperature_scale, False):
        acc = temps.setdefault((key, hour), [0.0, 0, None, 0.0])
        acc[0] += total
        acc[1] += count
        acc[2] = peak if acc[2] is None else max(acc[2], peak)
    for (key, hour), (total, count, peak, above) in temps.items():
        if key in devices:
            r = records.at(key, hour)
            r.temperature_c_avg = total / count
            r.temperature_c_max = peak
            r.seconds_above_83c = above


def _hour_slots(streams, window, scale) -> tuple[dict, tuple[list, list], list]:
    """The window's readings of every stream ({key: (timestamps, values, seconds)}) by (key,
    hour): the slots in the order the streams and their hours come ({(key, hour): slot}), and
    per stream the slot of each reading, its value × `scale` and its seconds."""
    slots: dict[tuple, int] = {}
    groups, values, seconds = [], [], []
    for key, (ts, vs, sec) in streams.items():
        at = np.flatnonzero((ts >= window.start) & (ts < window.end))
        if not len(at):
            continue
        groups.append(hour_slots(ts[at], slots, (key,)))
        values.append(vs[at] * scale)
        seconds.append(np.asarray(sec, dtype=float)[at])
    return slots, (groups, values), seconds


def _energy(records: _Records, cfg, window, devices, accs, power, fallback) -> None:
    """Power: energy is additive, so the board's joules are counted once and shared among the
    MIG instances (and pods) by their GPU-seconds in the hour."""
    keys_of: dict[str, list] = defaultdict(list)
    for key in devices:
        keys_of[key[0]].append(key)
    board = _board_hours(_board_streams(power, cfg.replica_labels, fallback, cfg.pinned_interval_seconds),
                         window, cfg.power_scale)
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
            r = records.at(key, hour)
            r.energy_joules = joules * share
            r.power_watts_avg = joules * share / covered


def _xid_errors(records: _Records, cfg, window, devices, xid, fallback) -> None:
    """XID errors: how many samples reported one in the hour, and which codes (in the order
    first seen). Only the few non-zero readings come through Python."""
    streams = _board_streams(xid, cfg.replica_labels, fallback, cfg.pinned_interval_seconds, False)
    for key, (times, values, _seconds) in streams.items():
        if key not in devices:
            continue
        at = np.flatnonzero((times >= window.start) & (times < window.end) & (values != 0))
        for ts, v in zip(times[at].tolist(), values[at].tolist()):
            r = records.at(key, hour_of(ts))
            r.xid_samples += 1
            code = int(v)
            if code not in r.xid_codes:
                r.xid_codes.append(code)


def _board_hours(streams, window, scale) -> dict[tuple, list]:
    """{(uuid, hour): [joules, seconds covered]} of each board's merged power stream: the
    sum over its samples in the hour of power × the seconds each stands for, added in time
    order (arrays.sequential_sums: the same floats as a loop)."""
    slots, (groups, watts), seconds = _hour_slots(streams, window, scale)
    if not slots:
        return {}
    sec = np.concatenate(seconds)
    sums = sequential_sums(np.concatenate(groups), np.vstack([np.concatenate(watts) * sec, sec]), len(slots))
    return {key: [float(sums[0, i]), float(sums[1, i])] for key, i in slots.items()}


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
        key = device_key(labels)
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
