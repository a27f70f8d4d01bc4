"""Copies of one stream merged into one (docs/accounting.md, "Replicas and duplicates"): an HA
Prometheus pair, two scrape jobs, an exporter restart, a board's power repeated on its MIG
instances and per-pod copies. The copies are put in a fixed order (`priority`), the first is
kept whole, and a later copy's sample is kept only where no kept sample lies within one of its
own spacings, measured within its run as `timeline.py` measures a stream's (a silence ends a
run; a sample alone in its run is measured by the chunk's interval). Split from timeline.py,
which says how long each sample of the merged stream counts.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .timeline import NEIGHBOURS, STALENESS_SECONDS, run_windows, window_medians


def priority(labels, replica_labels) -> tuple:
    """Fixed order among copies of a stream: by replica label values, then all other labels."""
    return (tuple(labels.get(r, "") for r in replica_labels),
            sorted((k, v) for k, v in labels.items() if k not in replica_labels))


def copy_spacings(ts: np.ndarray, lone: float) -> np.ndarray | float:
    """Each sample's spacing in a copy of a stream (sorted times `ts`), as the copy rule takes it:
    the median of the gaps of its run around it (up to NEIGHBOURS before it, its own and the
    next ones), `lone` (the chunk's interval) for a sample alone in its run. One float when every
    sample's spacing is the one gap of a regular copy."""
    gaps = np.diff(ts)
    if not len(gaps):
        return float(lone)
    if gaps.max() == gaps.min() and gaps[0] <= STALENESS_SECONDS:
        return gaps[0]   # the median of equal gaps is that gap
    i = np.arange(len(ts))
    lo, hi = run_windows(gaps, i, np.zeros_like(i), np.full_like(i, len(gaps)))
    lo, hi = np.maximum(lo, i - NEIGHBOURS), np.minimum(hi, i + NEIGHBOURS)
    spacing = window_medians(gaps, lo, np.maximum(hi - lo, 0))
    return np.where(np.isnan(spacing), float(lone), spacing)


def _additions(kept_ts: np.ndarray, ts: np.ndarray, lone: float) -> np.ndarray | None:
    """The copy rule, for both shapes of merge below: which samples of a later copy (sorted times
    `ts`) join the kept ones (sorted times `kept_ts`): those with no kept sample within one of
    the copy's own spacings (`copy_spacings`; so only where the earlier copies have a gap).
    None when none may: an empty copy, or one whose every instant is a kept sample's."""
    if not len(ts):
        return None
    m = len(kept_ts)
    j = np.searchsorted(kept_ts, ts, side="left")
    if m and (kept_ts[np.minimum(j, m - 1)] == ts).all():
        # every instant is a kept sample's (a board's power on each MIG instance or on a pod's
        # copy): each is that sample again, never kept twice (see below)
        return None
    spacing = copy_spacings(ts, lone)
    after = np.where(j < m, kept_ts[np.minimum(j, m - 1)] - ts, np.inf) if m else np.full(len(ts), np.inf)
    before = np.where(j > 0, ts - kept_ts[np.maximum(j - 1, 0)], np.inf) if m else np.full(len(ts), np.inf)
    # a sample at the very instant of a kept one is that sample again, whatever the spacing: never
    # kept twice
    return ~((after < spacing) | (before < spacing) | (after == 0))


def merge_copies(streams: Sequence[Sequence[tuple[float, float]]], lone: float) -> list[tuple[float, float]]:
    """One stream from several copies of it, listed in priority order (docs/accounting.md).

    The first copy is kept whole; a sample of a later copy is kept only where no kept sample
    lies within one of its own spacings (`_additions`). Samples as (time, value) tuples; `lone`:
    the spacing of a sample alone in its run (the chunk's interval).
    """
    if len(streams) == 1:
        return list(streams[0])
    kept = sorted(streams[0])
    kept_ts = np.array([t for t, _ in kept], dtype=float)
    for stream in streams[1:]:
        add = _additions(kept_ts, np.array([t for t, _ in stream], dtype=float), lone)
        if add is not None and add.any():
            kept = sorted(kept + [stream[k] for k in np.flatnonzero(add).tolist()])
            kept_ts = np.array([t for t, _ in kept], dtype=float)
    return kept


def merge_copy_columns(copies: Sequence[tuple[np.ndarray, np.ndarray]], lone: float) -> tuple[np.ndarray, np.ndarray]:
    """merge_copies of copies given as (timestamps, values) arrays: the same samples, as two
    arrays (sorted by time then value, as merge_copies sorts them; the two orders can differ
    only for a NaN value at an instant a copy repeats, which Prometheus never answers)."""
    if len(copies) == 1:
        return copies[0]
    order = np.lexsort((copies[0][1], copies[0][0]))
    kept_ts, kept_vs = copies[0][0][order], copies[0][1][order]
    for ts, vs in copies[1:]:
        add = _additions(kept_ts, ts, lone)
        if add is not None and add.any():
            all_ts = np.concatenate([kept_ts, ts[add]])
            all_vs = np.concatenate([kept_vs, vs[add]])
            order = np.lexsort((all_vs, all_ts))
            kept_ts, kept_vs = all_ts[order], all_vs[order]
    return kept_ts, kept_vs


def spaced_merges(ts: np.ndarray, values: np.ndarray, offsets: np.ndarray,
                  groups: list[list[int]], lone: float) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """merge_copy_columns of many groups of copies at once, for the groups where the order of
    the copies cannot matter; {group's index: (timestamps, values)}. Copy k is
    [offsets[k], offsets[k + 1]) of `ts` and `values`; a group lists its copies (any order).

    A group of several copies qualifies when every copy that holds any sample holds at least
    two, in strictly increasing time, copies agree, bit for bit, at an instant they share, and
    no sample has a sample of another copy at another instant closer than its own spacing (as
    `copy_spacings` takes it, `lone` for a sample alone in its run). Then, in whatever order the
    copies are merged, each sample of a copy is added unless its instant is already kept:
    the merge is the union of the instants, in time order, each with the value every copy
    holding it gives. That is a GPU's successive series (one per holding pod, an idle series
    between them), and a MIG board's power repeated on its instances. Groups of one copy are left
    out (merge_copy_columns returns that copy as it is), and so is any group where one of the
    conditions fails: those are merged copy by copy, in their priority order."""
    multi = [(g, members) for g, members in enumerate(groups) if len(members) > 1]
    if not multi:
        return {}
    lengths = np.diff(offsets)
    copies = np.array([k for _, members in multi for k in members], dtype=np.int64)
    group_of_copy = np.repeat(np.arange(len(multi)), [len(members) for _, members in multi])
    n = lengths[copies]
    failed = np.zeros(len(multi), dtype=bool)
    failed[group_of_copy[n == 1]] = True                 # merged copy by copy, as ever
    # every sample of the groups, with its group and copy, copy by copy
    first = np.cumsum(n) - n
    within = np.arange(int(n.sum())) - np.repeat(first, n)
    at = np.repeat(offsets[copies], n) + within
    t, v = ts[at], values[at]
    group = np.repeat(group_of_copy, n)
    copy = np.repeat(np.arange(len(copies)), n)
    step = np.diff(t)
    same_copy = copy[1:] == copy[:-1]
    failed[group[1:][same_copy & (step <= 0)]] = True    # not strictly increasing
    # each sample's run (its copy's gaps are step[first:first + n - 1]), and each copy's widest
    # gap within a run: no sample's spacing (a median of some of those gaps, or `lone` for a
    # sample alone in its run) exceeds it, or `lone` (copies of one sample failed above)
    own = np.repeat(first, n) + within
    run_lo, run_hi = run_windows(step, own, np.repeat(first, n), np.repeat(first + n - 1, n))
    lo, hi = np.maximum(run_lo, own - NEIGHBOURS), np.minimum(run_hi, own + NEIGHBOURS)
    alone = hi <= lo
    widest = np.full(len(copies), -np.inf)
    spaced = np.flatnonzero(n > 1)
    if len(spaced):
        in_run = np.where(same_copy & (step <= STALENESS_SECONDS), step, -np.inf)
        widest[spaced] = np.maximum.reduceat(in_run, first[spaced])
    widest[np.unique(copy[alone])] = np.fmax(widest[np.unique(copy[alone])], float(lone))
    order = np.lexsort((copy, t, group))
    t, v, group, copy = t[order], v[order], group[order], copy[order]
    # instants: runs of one group and time; a copy holds at most one sample of each
    new_instant = np.ones(len(t), dtype=bool)
    new_instant[1:] = (group[1:] != group[:-1]) | (t[1:] != t[:-1])
    bits = v.view(np.int64)
    failed[group[1:][~new_instant[1:] & (bits[1:] != bits[:-1])]] = True
    block = np.cumsum(new_instant) - 1                   # each sample's instant
    starts = np.flatnonzero(new_instant)
    block_t, block_group = t[starts], group[starts]
    # an instant held by one copy is labelled with it, one held by several with -1 (another copy
    # than any given one holds it); runs of one label within a group
    held = np.diff(np.append(starts, len(t)))
    label = np.where(held == 1, copy[starts], -1)
    new_run = np.ones(len(starts), dtype=bool)
    new_run[1:] = (label[1:] != label[:-1]) | (block_group[1:] != block_group[:-1]) | (label[1:] == -1)
    run_start = np.maximum.accumulate(np.where(new_run, np.arange(len(starts)), 0))
    run_end = np.minimum.accumulate(np.where(np.append(new_run[1:], True), np.arange(len(starts)),
                                             len(starts))[::-1])[::-1]

    def nearest_other(neighbour, past):
        """Per sample: the distance to the nearest instant on one side held by another copy."""
        b = block + (-1 if past else 1)
        inside = (b >= 0) & (b < len(starts))
        b = np.clip(b, 0, len(starts) - 1)
        own = inside & (label[b] == copy)              # the copy's own previous (next) instant
        b = np.where(own, neighbour[b] + (-1 if past else 1), b)
        inside &= (b >= 0) & (b < len(starts))
        b = np.clip(b, 0, len(starts) - 1)
        inside &= block_group[b] == group
        return np.where(inside, np.abs(t - block_t[b]), np.inf)

    near = np.minimum(nearest_other(run_start, True), nearest_other(run_end, False))
    # each sample's spacing (`copy_spacings`), only where another copy's instant lies nearer than
    # the copy's widest gap: elsewhere it is not nearer than the spacing either
    close = np.flatnonzero(near < widest[copy])
    at = order[close]                                    # those samples, copy by copy
    spacing = window_medians(step, lo[at], np.maximum(hi[at] - lo[at], 0))
    spacing = np.where(alone[at], float(lone), spacing)
    failed[group[close[near[close] < spacing]]] = True
    keep = new_instant
    t, v, group = t[keep], v[keep], group[keep]
    bounds = np.searchsorted(group, np.arange(len(multi) + 1), side="left").tolist()
    return {g: (t[bounds[i]:bounds[i + 1]], v[bounds[i]:bounds[i + 1]])
            for i, (g, _) in enumerate(multi) if not failed[i]}
