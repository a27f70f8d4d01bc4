"""Framebuffer memory per (device, pod, hour), joined onto the usage records devices.py built:
its average and peak, from raw samples or Prometheus' per-hour sums (docs/accounting.md; the
right-sizing rules read the peaks: docs/advice-and-alerts.md). `workloads` is devices.py's
reading of a series' namespace and pod, so memory lands on the same records as utilization.
"""
from __future__ import annotations

import numpy as np

from .arrays import columns, first_maxima, hour_slots, sequential_sums
from .labels import canonical, device_key
from .records import HourlySeries


def attach_memory(cfg, window, accs, fb_used, workloads) -> None:
    """Memory per (device, pod, hour), joined on the utilization rows' keys (a reading: copies
    of one value average to that value). Every series' readings in the window at once, in the
    order the series come (`sequential_sums`: the floats of the per-sample loop in
    tests/rollup_oracle/devices.py); Prometheus' per-hour sums, where asked for, take their place
    in that order as one reading each (their sum, count and maximum)."""
    slots: dict[tuple, int] = {}
    groups, totals, counts, peaks = [], [], [], []      # arrays of readings, in the series' order
    hourly: tuple[list, list, list, list] = ([], [], [], [])   # Prometheus' hours not yet in them

    def flush():
        if hourly[0]:
            for arrays, values, dtype in zip((groups, totals, counts, peaks), hourly, (np.int64, float, float, float)):
                arrays.append(np.array(values, dtype=dtype))
                values.clear()

    scale = cfg.fb_scale
    for s in fb_used:
        labels = canonical(s.labels)
        key = device_key(labels)
        namespace, pod = workloads.of(labels)
        if isinstance(s, HourlySeries):
            g, t, c, p = hourly
            for hour, total, count, peak in s.hours:
                if count and window.contains(hour):
                    g.append(slots.setdefault((key, namespace, pod, hour), len(slots)))
                    t.append(total * scale)
                    c.append(count)
                    p.append(peak * scale)
            continue
        flush()
        ts, vs = columns(s.samples)
        at = np.flatnonzero((ts >= window.start) & (ts < window.end) & np.isfinite(vs))
        if not len(at):
            continue
        groups.append(hour_slots(ts[at], slots, (key, namespace, pod)))
        values = vs[at] * scale
        totals.append(values)
        counts.append(np.ones(len(at)))
        peaks.append(values)
    flush()
    if not slots:
        return
    g, peak_of = np.concatenate(groups), np.concatenate(peaks)
    sums = sequential_sums(g, np.vstack([np.concatenate(totals), np.concatenate(counts)]), len(slots))
    maxima = first_maxima(g, peak_of, len(slots))   # as max() keeps it, reading by reading
    for acc_key, i in slots.items():
        acc = accs.get(acc_key)
        if acc is None:
            continue
        acc.rec.fb_used_mib_avg = float(sums[0, i]) / int(sums[1, i])
        acc.rec.fb_used_mib_max = float(maxima[i])
