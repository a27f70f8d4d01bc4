"""Device samples → per (device, namespace, pod, hour) usage records and device health.

The counting rules are in docs/accounting.md; timeline.py holds how long a sample counts and
how copies of a stream (replicas, scrape jobs, per-pod copies) are told apart.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Sequence

import numpy as np

from .labels import canonical, device_identity, gpu_fraction, is_time_slice, names_the_exporter, workload_of
from .records import (WORKLOAD_LABELS, WORKLOAD_NAMES, DeviceInfo, DeviceRollup, RollupConfig, Series,
                      Window, _finite)
from .arrays import columns, without_no_value, joined_columns
from .batch import _Acc, _Batch
from .health import device_health
from .memory import attach_memory
from .copies import merge_copy_columns
from .copies import priority as _priority
from .timeline import Coverage, StreamGaps
from .capacity import free_slices, in_mig_mode, instance_spans, readings_only
from .dra import DRA_CLAIM_NAME, DRA_CLAIM_NAMESPACE, is_dra, mig_copies


class _Stream:
    """One logical stream: all copies of a device's series for one workload, merged."""
    __slots__ = ("key", "info", "namespace", "pod", "scale", "seconds", "sliced", "ts", "values", "inside", "claim")

    def __init__(self, key, info, namespace, pod, scale, sliced, ts, values, inside, seconds, claim=False):
        self.key, self.info, self.namespace, self.pod = key, info, namespace, pod
        self.scale, self.sliced = scale, sliced
        self.claim = claim          # a workload's stream whose series carry a DRA claim
        self.ts, self.values, self.inside, self.seconds = ts, values, inside, seconds


def _count_in(ts: np.ndarray, window: Window) -> int:
    """How many of the time-ordered instants lie in the window."""
    lo, hi = np.searchsorted(ts, (window.start, window.end), side="left").tolist()
    return hi - lo


def _holders(pods: Sequence[_Stream], ts: np.ndarray) -> np.ndarray:
    """How many pods hold a time-sliced GPU at each instant (each pod stream covers its
    samples' spans)."""
    n = np.zeros(len(ts), dtype=np.int64)
    for st in pods:
        if not len(st.ts):
            continue
        i = np.searchsorted(st.ts, ts, side="right") - 1
        held = i >= 0
        i = np.where(held, i, 0)
        n += held & (ts < st.ts[i] + st.seconds[i])
    return n


class _Workloads:
    """Which workload a series names, after the checks of docs/accounting.md
    ("The exporter's own namespace"); counts what it had to distrust."""

    def __init__(self, cfg: RollupConfig, candidates: set | None = None):
        self.cfg = cfg
        self.names = WORKLOAD_LABELS[cfg.spelling]
        self.distrusted: dict[tuple[str, str], int] = {}
        self.known: dict[tuple, tuple[str, str, bool]] = {}   # the verdict on each set of workload labels
        # kube-state-metrics' requests are evidence only when they name some of the pods DCGM
        # names: a source that lists no running pod at all (pending ones only) proves nothing.
        self.gpu_pods = cfg.gpu_pods if cfg.gpu_pods and (candidates is None or candidates & cfg.gpu_pods) else None

    def of(self, labels) -> tuple[str, str]:
        ns_label, pod_label, container_label = self.names
        seen = (labels.get(ns_label), labels.get(pod_label), labels.get(container_label),
                labels.get(DRA_CLAIM_NAMESPACE), labels.get(DRA_CLAIM_NAME))
        verdict = self.known.get(seen)
        if verdict is None:
            verdict = self.known[seen] = self._judged(labels)
        namespace, pod, distrusted = verdict
        if distrusted:
            self.distrusted[(namespace, pod)] = self.distrusted.get((namespace, pod), 0) + 1
            return "", ""
        return namespace, pod

    def _judged(self, labels) -> tuple[str, str, bool]:
        """(namespace, pod, distrusted?) of a series' workload labels."""
        cfg = self.cfg
        namespace, pod = workload_of(labels, cfg.spelling)
        if not namespace:
            return "", "", False
        # A pod holding a GPU through a ResourceClaim requests no extended resource, so
        # kube-state-metrics' requests cannot vouch for it; its claim does.
        distrusted = names_the_exporter(labels, cfg.spelling) or (
            self.gpu_pods is not None and (namespace, pod) not in self.gpu_pods and not is_dra(labels))
        return namespace, pod, distrusted

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
    marked = 0
    read = []
    for series_list in (whole_util, mig_util, fb_used, power, temperature, xid):
        kept, n = without_no_value(series_list, window.start, window.end)
        read.append(kept)
        marked += n
    whole_util, mig_util, fb_used, power, temperature, xid = read
    if marked:
        warnings.append(f"{marked} sample{'' if marked == 1 else 's'} held DCGM's no-value marker (a field blank, "
                        f"not found, not supported or not permitted, e.g. 9223372036854775794): read as no reading")
    candidates = {workload_of(s.labels, cfg.spelling) for s in (*whole_util, *mig_util)} if cfg.gpu_pods else None
    workloads = _Workloads(cfg, candidates)

    chosen = mig_copies(_chosen_series(cfg, whole_util, mig_util), WORKLOAD_NAMES,
                        lambda labels: workload_of(labels, cfg.spelling))
    chosen += readings_only(chosen, power, fb_used, temperature, warnings)
    streams, raw_in_window, fallback, tiled = _merged_streams(cfg, window, chosen, workloads)
    devices: dict[tuple[str, str], dict] = {}
    accs, counted = _count_samples(cfg, window, streams, tiled, devices, warnings)
    warnings.extend(workloads.warnings())

    attach_memory(cfg, window, accs, fb_used, workloads)
    health = device_health(cfg, window, devices, accs, power, temperature, xid, fallback)

    device_infos = {k: DeviceInfo(**v) for k, v in devices.items()}
    return DeviceRollup(
        usage=[a.rec for a in accs.values()], devices=device_infos, health=health,
        warnings=warnings, samples_read=raw_in_window, duplicates=max(0, raw_in_window - counted),
    )


def _chosen_series(cfg: RollupConfig, whole_util: list, mig_util: list) -> list[tuple]:
    """Which series count, as (labels, series, scale): MIG instances through GR_ENGINE_ACTIVE,
    whole GPUs through GPU_UTIL. A GPU's whole-GPU series stay even where its MIG instances'
    come too: which instants of them count is decided per instant (`capacity.in_mig_mode`), so a GPU
    the MIG manager reconfigures keeps its whole-GPU hours (docs/accounting.md, "When devices
    change")."""
    chosen = []
    for s in mig_util:
        labels = canonical(s.labels)
        if labels.get("GPU_I_PROFILE"):
            chosen.append((labels, s, cfg.mig_util_scale))
    for s in whole_util:
        labels = canonical(s.labels)
        if not labels.get("GPU_I_PROFILE"):
            chosen.append((labels, s, cfg.util_scale))
    return chosen


def _merged_streams(cfg: RollupConfig, window: Window, chosen: list[tuple],
                    workloads: _Workloads) -> tuple[list[_Stream], int, float]:
    """Copies of one stream (replicas, scrape jobs, exporter restarts) merged into one, each
    sample given the seconds it counts for. Returns the streams, how many raw samples lay in
    the window, and the typical spacing that a lone sample counts for."""
    groups: dict[tuple, list] = defaultdict(list)
    for labels, s, scale in chosen:
        key, info = device_identity(labels)
        namespace, pod = workloads.of(labels)
        sliced = is_time_slice(labels) and bool(namespace)
        # a MIG instance's profile is part of its stream: a layout change can give its id to another size
        groups[(key, info["mig_profile"], namespace, pod, sliced)].append((labels, s, scale, info))
    heads, merged_all = [], []
    raw_in_window = 0
    for (key, _profile, namespace, pod, sliced), members in groups.items():
        if len(members) > 1:   # copies: in their fixed order (computed only where there are some)
            members.sort(key=lambda m: _priority(m[0], cfg.replica_labels))
        copies = [columns(m[1].samples) for m in members]
        for ts, _ in copies:
            raw_in_window += _count_in(ts, window)
        heads.append((key, members[0][3], namespace, pod, members[0][2], sliced,
                      bool(namespace) and any(is_dra(m[0]) for m in members)))
        merged_all.append(merge_copy_columns(copies, cfg.interval_seconds))
    # One set of arrays for all the chunk's streams; each stream's columns are views of it.
    ts_all, values_all, offsets = joined_columns(merged_all)
    del merged_all
    inside_all = (ts_all >= window.start) & (ts_all < window.end)
    gaps = StreamGaps(ts_all, offsets)
    fallback = gaps.typical_spacing() or cfg.interval_seconds
    seconds_all = gaps.seconds(fallback, cfg.pinned_interval_seconds)
    streams = [_Stream(key, info, namespace, pod, scale, sliced, ts_all[lo:hi], values_all[lo:hi], inside_all[lo:hi],
                       seconds_all[lo:hi], claim)
               for (key, info, namespace, pod, scale, sliced, claim), lo, hi
               in zip(heads, offsets[:-1].tolist(), offsets[1:].tolist())]
    tiled = _crossing_devices(heads, ts_all, seconds_all, offsets)
    return streams, raw_in_window, fallback, tiled


def _crossing_devices(heads: list[tuple], ts: np.ndarray, seconds: np.ndarray, offsets: np.ndarray) -> set:
    """The devices whose whole-device streams' spans [ts, ts + seconds) cross one another's.

    Only these need tiling (`Coverage`): on any other device no span meets an earlier one, so
    each span's free seconds are its whole length, which is what `Coverage.claim` would give
    (an overlap of 0.0 subtracted). Found for the whole chunk at once: each device's spans in
    order of their starts, a device crosses where one span ends after the next one starts.
    Spans of one stream never cross (a sample counts at most until the next), so a crossing
    is between two streams; where a pinned interval makes them cross, the device is tiled,
    which is exact either way."""
    device_of: dict = {}
    plain = np.array([not head[5] for head in heads], dtype=bool)      # head: (key, info, ns, pod, scale, sliced, …)
    device = np.array([device_of.setdefault(h[0], len(device_of)) for h in heads], dtype=np.int64)
    lengths = np.diff(offsets)
    keep = np.repeat(plain, lengths)
    dev = np.repeat(device, lengths)[keep]
    a = ts[keep]
    b = a + seconds[keep]
    order = np.lexsort((a, dev))
    dev, a, b = dev[order], a[order], b[order]
    cross = (dev[1:] == dev[:-1]) & (b[:-1] > a[1:])
    crossing = set(np.unique(dev[1:][cross]).tolist())
    return {key for key, k in device_of.items() if k in crossing}


def _note_device(cfg: RollupConfig, devices: dict, warnings: list[str], key, info, ts_first, ts_last) -> dict:
    """The device's inventory entry (its GPU fraction worked out once), widened to these samples."""
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


def _count_samples(cfg: RollupConfig, window: Window, streams: list[_Stream], tiled: set, devices: dict,
                   warnings: list[str]) -> tuple[dict[tuple, _Acc], int]:
    """Each sample that counts, per device: time-sliced pods share the GPU, whole-device streams
    are tiled so every instant counts once (on the devices in `tiled`, the only ones where
    streams cross: `_crossing_devices`). Returns the records' accumulators and how many
    samples counted."""
    # A device is its key and, for a MIG instance, its profile: after a layout change the same
    # GPU_I_ID can name an instance of another size (docs/accounting.md, "When devices change").
    by_device: dict[tuple, list[_Stream]] = defaultdict(list)
    for st in streams:
        by_device[(st.key, st.info["mig_profile"])].append(st)

    # Each sample that counts is one entry of a chunk-wide batch; the records' sums are then
    # taken all at once, in the very order the samples were met (docs/performance.md).
    accs: dict[tuple, _Acc] = {}
    batch = _Batch(accs)
    spans = instance_spans(streams)
    mig_mode = in_mig_mode(spans)
    parents_covered = 0
    for (key, profile), dev_streams in by_device.items():
        in_window = [st for st in dev_streams if st.inside.any()]
        if not in_window:
            continue
        d = _note_device(cfg, devices, warnings, key, in_window[0].info,
                         min(float(st.ts[st.inside].min()) for st in in_window),
                         max(float(st.ts[st.inside].max()) for st in in_window))
        if d["mig_profile"] != profile:   # the inventory keeps the key's first profile; these count as theirs
            d = dict(d, mig_profile=profile, gpu_fraction=gpu_fraction(
                d["model_name"], profile, cfg.mig_slices_overrides)[0])
        fraction = d["gpu_fraction"]
        pods = [st for st in dev_streams if st.sliced]
        plain = [st for st in dev_streams if not st.sliced]
        own = _own_values(cfg.time_slicing, pods, plain) if pods else False
        for st in pods:
            holding = _holders(pods, st.ts[st.inside])
            if not holding.all():
                # a sample that stands for no time (two copies at one instant, each alone in
                # its series): the per-sample loop divided by zero here, and so does this
                raise ZeroDivisionError("float division by zero")
            share = fraction / holding
            batch.add(st, d, st.inside, st.seconds, share, fraction if own else share)
        # Whole-device streams: tiled, the workloads' first, so every instant counts once.
        plain.sort(key=lambda st: (not st.namespace, st.namespace, st.pod))
        coverage = Coverage() if len(plain) > 1 and key in tiled else None
        in_mig = mig_mode.get(key[0]) if not d["mig_profile"] else None
        if in_mig is not None:
            # a whole-GPU series counts only the instants its GPU is not in MIG mode
            coverage = in_mig.copy()
        for st in plain:
            if coverage is not None:
                free = coverage.claim(st.ts, st.ts + st.seconds)
            else:
                free = (st.ts + st.seconds) - st.ts
            counts = st.inside & (free > 1e-9)
            if in_mig is not None:
                parents_covered += int(np.count_nonzero(st.inside & (free <= 1e-9)))
            if pods:
                # the device series of a time-sliced GPU counts nothing while its pods hold it
                at = np.flatnonzero(counts)
                counts[at[_holders(pods, st.ts[at]) > 0]] = False
            batch.add(st, d, counts, free, fraction, fraction)

    pseudo = _unoccupied_slices(cfg, window, spans, streams, devices, warnings, batch) if cfg.unoccupied_slices else 0
    if parents_covered:
        warnings.append(f"{parents_covered} whole-GPU utilization sample(s) of GPUs in MIG mode were not counted: "
                        f"their MIG instances stand for those instants")
    clamped, counted = batch.settle(cfg)
    counted -= pseudo
    if clamped:
        warnings.append(f"{clamped} utilization sample{'' if clamped == 1 else 's'} outside 0-100 % {'was' if clamped == 1 else 'were'} clamped")
    unknown = sum(a.rec.unknown_util_samples for a in accs.values())
    if unknown:
        warnings.append(f"{unknown} utilization sample(s) were NaN/Inf: counted as allocated, not as used or idle")
    return accs, counted


def _unoccupied_slices(cfg: RollupConfig, window: Window, spans: dict, streams: list[_Stream], devices: dict,
                       warnings: list[str], batch: _Batch) -> int:
    """The slices of each MIG-mode GPU no instance occupies (`capacity.free_slices`), added to
    `batch` as pseudo-samples of the GPU's own (whole) device with no workload; returns how many."""
    added = 0
    for uuid, (ts, seconds, share) in free_slices(cfg, window, spans).items():
        info = dict(next(st.info for st in streams if st.key[0] == uuid and st.info["mig_profile"]),
                    mig_instance_id="", mig_profile="")
        d = _note_device(cfg, devices, warnings, (uuid, ""), info, float(ts[0]), float(ts[-1]))
        st = _Stream((uuid, ""), info, "", "", 1.0, False, ts, np.zeros(len(ts)), np.ones(len(ts), dtype=bool),
                     seconds)
        batch.add(st, d, st.inside, seconds, share, share)
        added += len(ts)
    return added


def _own_values(mode: str, pods: Sequence[_Stream], plain: Sequence[_Stream]) -> bool:
    """Whether a time-sliced GPU's per-pod series hold each pod's own utilization (dcgm-exporter
    4.5.3+) rather than copies of the device's (4.4-4.5.2): docs/accounting.md."""
    if mode in ("own", "copies"):
        return mode == "own"
    at: dict[float, list[float]] = defaultdict(list)
    for st in pods:
        for ts, v in zip(st.ts.tolist(), st.values.tolist()):
            if _finite(v):
                at[ts].append(v)
    for st in plain:
        for ts, v in zip(st.ts.tolist(), st.values.tolist()):
            if ts in at and _finite(v):
                at[ts].append(v)
    return any(max(vs) - min(vs) > 1e-9 for vs in at.values() if len(vs) > 1)
