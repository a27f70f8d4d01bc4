"""What a device stands for in capacity beyond its utilization samples (docs/accounting.md, "When
devices change"): the instants a GPU is in MIG mode, the slices no MIG instance occupies, and
devices that report readings but no utilization. devices.py turns these into usage records.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from .arrays import columns
from .labels import canonical, device_key, gpu_fraction
from .dra import DRA_LABELS
from .records import WORKLOAD_NAMES, HourlySeries, RollupConfig, Samples, Series, Window
from .timeline import Coverage


def readings_only(chosen: list[tuple], power: list, fb_used: list, temperature: list,
                   warnings: list[str]) -> list[tuple]:
    """Devices the exporter reports readings of but no utilization (a T4 whose exporter lacks
    GPU_UTIL; a MIG instance without GR_ENGINE_ACTIVE under older counters): capacity all the
    same, unallocated and idle, timed by their raw power samples, else memory's or
    temperature's (docs/accounting.md, "When devices change"). Their workload labels are not
    read: with no utilization, what a pod did with the GPU is unknown."""
    counted = {device_key(labels) for labels, _s, _scale in chosen}
    found: dict[tuple, list] = {}
    for readings in (power, fb_used, temperature):
        seen_here: dict[tuple, list] = {}
        for s in readings:
            if isinstance(s, HourlySeries) or not len(s.samples):
                continue
            labels = canonical(s.labels)
            key = device_key(labels)
            if key in counted or (key in found and key not in seen_here):
                continue
            bare = {k: v for k, v in labels.items() if k not in _WORKLOAD_NAMES}
            zeros = Series(bare, Samples(columns(s.samples)[0], np.zeros(len(s.samples))))
            seen_here.setdefault(key, []).append((bare, zeros, 1.0))
        for key, members in seen_here.items():
            found.setdefault(key, members)
    if found:
        warnings.append(f"{len(found)} device(s) reported readings but no utilization: counted as unallocated "
                        f"capacity")
    return [m for members in found.values() for m in members]


_WORKLOAD_NAMES = WORKLOAD_NAMES | set(DRA_LABELS)


def instance_spans(streams: list) -> dict[str, dict[tuple, tuple[Coverage, str, str]]]:
    """Per GPU (UUID) in MIG mode at some instant of the chunk: each MIG instance's time, the
    union of the spans its samples stand for (whoever held it), with its model and profile. An
    instance is its key and profile: a layout change can give a GPU_I_ID to another size."""
    out: dict[str, dict[tuple, tuple[Coverage, str, str]]] = defaultdict(dict)
    for st in streams:
        profile = st.info["mig_profile"]
        if profile and len(st.ts):
            cov, _, _ = out[st.key[0]].setdefault((st.key, profile), (Coverage(), st.info["model_name"], profile))
            cov.claim(st.ts, st.ts + st.seconds)
    return out


def in_mig_mode(spans: dict) -> dict[str, Coverage]:
    """Per GPU: the instants it was in MIG mode (any of its instances stood for them)."""
    out = {}
    for uuid, instances in spans.items():
        cov = Coverage()
        for inst, _model, _profile in instances.values():
            cov.claim(inst.starts, inst.ends)
        out[uuid] = cov
    return out


def free_slices(cfg: RollupConfig, window: Window, spans: dict) -> dict[str, tuple]:
    """A GPU in MIG mode is a whole GPU of capacity: per GPU, the pseudo-samples of the slices none
    of its instances occupies (starts, seconds, share of the GPU), over the instants it was in MIG
    mode, cut at the window's hours (three 2g.20gb on a 7-slice A100 leave 1/7)."""
    out = {}
    for uuid, instances in spans.items():
        # elementary intervals between every instance's span edges, the hours and the window's ends
        edges = [np.array([window.start, window.end], dtype=float),
                 np.arange(window.start, window.end, 3600, dtype=float)]
        for cov, _model, _profile in instances.values():
            edges += [cov.starts, cov.ends]
        cuts = np.unique(np.concatenate(edges))
        cuts = cuts[(cuts >= window.start) & (cuts <= window.end)]
        if len(cuts) < 2:
            continue
        a, b = cuts[:-1], cuts[1:]
        occupied = np.zeros(len(a))
        present = np.zeros(len(a), dtype=bool)
        for cov, model, profile in instances.values():
            i = np.searchsorted(cov.ends, a, side="right")
            within = i < len(cov.starts)
            i = np.where(within, i, 0)
            on = within & (cov.starts[i] <= a)
            occupied += np.where(on, gpu_fraction(model, profile, cfg.mig_slices_overrides)[0], 0.0)
            present |= on
        free = np.maximum(0.0, 1.0 - occupied)
        at = np.flatnonzero(present & (free > 1e-9))
        if len(at):
            out[uuid] = (a[at], (b - a)[at], free[at])
    return out
