"""Per-record sums and idle runs over a whole chunk's samples at once, with numpy.

Each function gives, bit for bit, what the per-sample Python loop it replaced gave (the loops
are kept as the oracle in tests/rollup_oracle/ and compared on random streams): floats are
added one after another in the samples' order, never pairwise as `numpy.sum` would, because a
different order of additions rounds differently and finance signs the figures
(docs/performance.md, "Ingest: what was measured, what was chosen").
"""
from __future__ import annotations

from itertools import chain

import numpy as np

from .records import DCGM_NO_VALUE, HOUR_SECONDS, NO_VALUE_FLOOR, HourlySeries, Samples, Series

_NO_VALUE = np.array(sorted(DCGM_NO_VALUE))


def columns(samples) -> tuple[np.ndarray, np.ndarray]:
    """(timestamps, values) of a series' samples, as float arrays: the parser's own (`Samples`)
    as they are, a list of (ts, value) tuples converted."""
    if isinstance(samples, Samples):
        return samples.ts, samples.values
    if not len(samples):
        return np.empty(0), np.empty(0)
    pairs = np.array(samples, dtype=float).reshape(-1, 2)
    return pairs[:, 0].copy(), pairs[:, 1].copy()


def without_no_value(series_list, start: float, end: float) -> tuple[list, int]:
    """The series with DCGM's no-value markers (records.DCGM_NO_VALUE) read as NaN, which every
    roll-up reads as no reading; and how many samples in [start, end) held one. A series with
    no value as high as the lowest marker is passed on as it is (one pass over its values)."""
    out, marked = [], 0
    for s in series_list:
        if not isinstance(s, HourlySeries) and len(s.samples):
            ts, vs = columns(s.samples)
            if not vs.max() < NO_VALUE_FLOOR:           # NaN among them lands here too
                hit = np.isin(vs, _NO_VALUE)
                if hit.any():
                    marked += int(np.count_nonzero(hit & (ts >= start) & (ts < end)))
                    s = Series(labels=s.labels, samples=Samples(ts, np.where(hit, np.nan, vs)))
        out.append(s)
    return out, marked


def chunk_columns(streams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(timestamps, values, offsets) of many lists of (ts, value) samples at once: stream k is
    [offsets[k], offsets[k + 1]) of both arrays (one conversion for a whole chunk)."""
    offsets = np.zeros(len(streams) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in streams], out=offsets[1:])
    n = int(offsets[-1])
    flat = np.fromiter(chain.from_iterable(chain.from_iterable(streams)), dtype=float, count=2 * n)
    return flat[0::2].copy(), flat[1::2].copy(), offsets


def stream_columns(streams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """chunk_columns of many series' samples, whichever shape they come in: the parser's arrays
    are joined as they are, lists of tuples converted in one step."""
    if streams and all(isinstance(s, Samples) for s in streams):
        return joined_columns([(s.ts, s.values) for s in streams])
    return chunk_columns([list(s) if isinstance(s, Samples) else s for s in streams])


def joined_columns(pairs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(timestamps, values, offsets) of many (timestamps, values) array pairs joined into one
    set of arrays: pair k is [offsets[k], offsets[k + 1])."""
    offsets = np.zeros(len(pairs) + 1, dtype=np.int64)
    if not pairs:
        return np.empty(0), np.empty(0), offsets
    np.cumsum([len(ts) for ts, _ in pairs], out=offsets[1:])
    return (np.concatenate([ts for ts, _ in pairs]).astype(float, copy=False),
            np.concatenate([vs for _, vs in pairs]).astype(float, copy=False), offsets)


def hour_slots(ts: np.ndarray, slots: dict, prefix: tuple) -> np.ndarray:
    """The slot of each instant of `ts` (time-ordered) among `slots` ({prefix + (hour,): slot}),
    the hours not yet there added in the order they come: what `sequential_sums` groups by."""
    hours = (ts // HOUR_SECONDS) * HOUR_SECONDS
    bounds = [0, *(np.flatnonzero(hours[1:] != hours[:-1]) + 1).tolist(), len(ts)]
    group = np.empty(len(ts), dtype=np.int64)
    for lo, hi in zip(bounds, bounds[1:]):
        group[lo:hi] = slots.setdefault((*prefix, int(hours[lo])), len(slots))
    return group


def first_maxima(groups: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per group (0 ≤ group < n) what `top = v if top is None else max(top, v)` over its values
    in order gives: the first of its largest values (of 0.0 and -0.0, whichever came first:
    numpy's maximum may keep either), NaN where its first value is NaN (nothing is larger than
    NaN, nor NaN than anything), and NaN for a group with no value."""
    top = np.full(n, np.nan)
    if not len(groups):
        return top
    np.fmax.at(top, groups, values)              # the largest value, NaNs aside
    hit = np.flatnonzero(values == top[groups])  # the values equal to it, in order
    first_hit = np.full(n, -1, dtype=np.int64)
    first_hit[groups[hit][::-1]] = hit[::-1]     # the last assignment wins: the first of them
    found = first_hit >= 0
    top[found] = values[first_hit[found]]
    first = np.full(n, -1, dtype=np.int64)
    first[groups[::-1]] = np.arange(len(groups))[::-1]
    has = first >= 0
    top[np.flatnonzero(has)[np.isnan(values[first[has]])]] = np.nan
    return top


def sequential_sums(groups: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Σ of each row of `values` (k × N) per group (0 ≤ group < n), added one after another in
    the order of the samples, starting from 0.0: what `total += v` in a loop gives.

    `numpy.bincount` with weights is that loop in C (`out[group[i]] += weight[i]` for i in
    order, from zeros, in float64), unlike `numpy.add.reduceat` or `numpy.sum`, which add
    pairwise: 10–35× faster than sorting the samples by their place in their group and adding
    one place at a time, and the same floats (`tests/ingest/test_rollup_math.py`)."""
    values = np.atleast_2d(values)
    if not len(groups):
        return np.zeros((values.shape[0], n))
    return np.vstack([np.bincount(groups, weights=row, minlength=n) for row in values])


def idle_runs(groups, ts, seconds, idle, hour_start, n: int):
    """Idle stretches of each group's samples (one record: time-ordered, one hour), as
    `batch._idle_runs` computes them per record: (longest, prefix, suffix, whole hour).

    `groups` must be sorted (each record's samples together, in time order); `idle` is True
    only for samples below the idle threshold (unknown utilization breaks a run like a busy
    sample does).
    """
    longest = np.zeros(n)
    prefix = np.zeros(n)
    suffix = np.zeros(n)
    whole = np.zeros(n, dtype=bool)
    m = len(groups)
    if not m:
        return longest, prefix, suffix, whole
    first = np.ones(m, dtype=bool)
    first[1:] = groups[1:] != groups[:-1]
    last = np.ones(m, dtype=bool)
    last[:-1] = first[1:]
    previous_end = np.empty(m)
    previous_end[1:] = ts[:-1] + seconds[:-1]
    previous_end[0] = 0.0
    contiguous = ~first & (ts - previous_end <= 0.5 * seconds + 1e-6)
    idle_before = np.zeros(m, dtype=bool)
    idle_before[1:] = idle[:-1]
    starts = idle & (first | ~contiguous | ~idle_before)
    run_of = np.cumsum(starts) - 1
    runs = int(starts.sum())
    if not runs:
        return longest, prefix, suffix, whole
    members = np.flatnonzero(idle)
    lengths = sequential_sums(run_of[members], seconds[members], runs)[0]
    run_first = np.flatnonzero(starts)
    run_last = np.full(runs, -1, dtype=np.int64)
    np.maximum.at(run_last, run_of[members], members)   # members ascend: the last one wins
    run_group = groups[run_first]
    np.maximum.at(longest, run_group, lengths)   # lengths are ≥ 0, so 0.0 stays the default
    # a group's first and last run (runs are in sample order, so groups' runs are together)
    group_first_run = np.full(n, -1)
    group_last_run = np.full(n, -1)
    group_runs = np.bincount(run_group, minlength=n)
    rev = np.arange(runs)[::-1]
    group_first_run[run_group[::-1]] = rev      # the last assignment wins: the first run
    group_last_run[run_group] = np.arange(runs)
    has = group_runs > 0
    g = np.flatnonzero(has)
    fr, lr = group_first_run[g], group_last_run[g]
    start_at_first = first[run_first[fr]]
    first_ts, first_sec = ts[run_first[fr]], seconds[run_first[fr]]
    hour = hour_start[g]
    at_prefix = start_at_first & (first_ts - hour <= first_sec + 1e-6)
    prefix[g[at_prefix]] = lengths[fr[at_prefix]]
    end_at_last = last[run_last[lr]]
    last_ts, last_sec = ts[run_last[lr]], seconds[run_last[lr]]
    at_suffix = end_at_last & ((hour + 3600) - (last_ts + last_sec) <= 0.5 * last_sec + 1e-6)
    suffix[g[at_suffix]] = lengths[lr[at_suffix]]
    whole[g] = (group_runs[g] == 1) & (prefix[g] > 0) & (suffix[g] > 0) & start_at_first & end_at_last
    return longest, prefix, suffix, whole
