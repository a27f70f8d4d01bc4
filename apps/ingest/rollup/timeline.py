"""How long each sample stands for, and which sample counts when several cover one instant.

The rules are written down, with worked examples, in docs/accounting.md ("How long a sample
counts", "Replicas and duplicates"). In short:

* A sample counts from its timestamp until the next sample of the same stream, as long as
  that gap is plausible for the stream's own scrape interval (at most `GAP_FACTOR` local
  spacings, at least `MIN_STALE_SECONDS`, never beyond Prometheus' `STALENESS_SECONDS`);
  past that, the stream is taken to have stopped, and the sample counts one local spacing.
  The last sample of a stream counts one local spacing. A local spacing is measured within
  the sample's run: a silence (a gap longer than `STALENESS_SECONDS`) ends one, and a sample
  alone in its run counts the chunk's interval. An admin-pinned interval replaces all of
  this with a fixed duration per sample.
* Copies of one stream (an HA Prometheus pair, two scrape jobs, an exporter restart) are
  merged first: the copies are ordered by a fixed priority, the first is kept whole, and a
  later copy's sample is kept only where no kept sample lies within one spacing of it — so a
  gap in one replica is filled by the other and nothing is counted twice.
* Different streams of one device (a pod's series, then the idle series) are tiled: each
  instant counts once, for the highest-priority stream that covers it.

Everything here looks only at samples near the one being measured, so the ingest reads a
lookaround (`LOOKAROUND_SECONDS`) on both sides of each chunk and the figures do not depend
on where chunks begin. How near: a sample's duration reads its own gap and up to three more
of its run after it, three before it (each gap of a run at most `STALENESS_SECONDS`: 4 × 300 s
ahead, 3 × 300 s behind); whether a copy's sample is in the merged stream at all reads up to
three gaps of its copy's run on either side (3 × 300 s). Hence 7 × 300 s: exact for a stream and
one level of copies (a third copy merged against a second's additions reaches 300 s further).
"""
from __future__ import annotations

from statistics import median
from typing import Sequence

import numpy as np

STALENESS_SECONDS = 300.0     # Prometheus' default lookback: no sample stands for longer
MIN_STALE_SECONDS = 120.0     # a gap this short is a missed scrape or a restart, never an absence
GAP_FACTOR = 4.0              # ... and so is a gap of up to four local spacings
NEIGHBOURS = 3                # gaps on each side that estimate the local spacing
LOOKAROUND_SECONDS = 7 * 300  # read this much before and after a chunk (see above)


def priority(labels, replica_labels) -> tuple:
    """Fixed order among copies of a stream: by replica label values, then all other labels."""
    return (tuple(labels.get(r, "") for r in replica_labels),
            sorted((k, v) for k, v in labels.items() if k not in replica_labels))


def gaps_of(ts: Sequence[float]) -> list[float]:
    return [b - a for a, b in zip(ts, ts[1:])]


def typical_spacing(streams: Sequence[Sequence[float]]) -> float | None:
    """Median over streams of each stream's median gap: the chunk-wide estimate of an interval."""
    medians = [median(g) for g in (gaps_of(ts) for ts in streams) if g]
    return round(median(medians), 3) if medians else None


def durations(ts: Sequence[float], fallback: float, pinned: float | None = None) -> list[float]:
    """Seconds each sample of one time-ordered stream stands for (docs/accounting.md)."""
    n = len(ts)
    return StreamGaps(np.asarray(ts, dtype=float), np.array([0, n])).seconds(fallback, pinned).tolist()


def run_windows(gaps: np.ndarray, g: np.ndarray, first: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gaps [lo, hi) of each sample's run: a sample whose own gap is gaps[g] (none when
    g == end), in a stream whose gaps are gaps[first:end]. A silence (a gap longer than
    STALENESS_SECONDS) ends a run; no spacing is measured across one (docs/accounting.md)."""
    n = len(gaps)
    if not n:
        return g.copy(), g.copy()
    at = np.arange(n)
    silent = gaps > STALENESS_SECONDS
    last_silence = np.maximum.accumulate(np.where(silent, at, -1))           # at or before each gap
    next_silence = np.minimum.accumulate(np.where(silent, at, n)[::-1])[::-1]   # at or after each gap
    lo = np.maximum(first, np.where(g > first, last_silence[np.clip(g - 1, 0, n - 1)] + 1, first))
    hi = np.where(g < end, np.minimum(end, next_silence[np.clip(g, 0, n - 1)]), g)
    return lo, hi


class StreamGaps:
    """The gaps between successive samples of many streams held in one set of arrays
    (timestamps, and offsets: stream k is [offsets[k], offsets[k + 1])), for `typical_spacing`
    and `durations` of all of them at once, giving the very floats the per-stream functions give."""

    def __init__(self, ts: np.ndarray, offsets: np.ndarray):
        self.ts, self.offsets = ts, offsets
        self.n = np.diff(offsets)
        gaps = np.diff(ts)
        within = np.ones(len(gaps), dtype=bool)
        cuts = offsets[1:-1]
        within[cuts[(cuts > 0) & (cuts < len(ts))] - 1] = False     # a gap across two streams
        self.gaps = gaps[within]
        self.count = np.maximum(self.n - 1, 0)                      # gaps per stream
        self.start = np.zeros(len(self.n), dtype=np.int64)          # where each stream's gaps start
        np.cumsum(self.count[:-1], out=self.start[1:])
        self.multi = np.flatnonzero(self.count > 0)

    def typical_spacing(self) -> float | None:
        """typical_spacing of the streams (median over streams of each one's median gap)."""
        if not len(self.multi):
            return None
        c, lo = self.count[self.multi], self.start[self.multi]
        order = np.lexsort((self.gaps, np.repeat(np.arange(len(self.n)), self.count)))
        ordered = self.gaps[order]
        mid = lo + c // 2
        medians = np.where(c % 2 == 1, ordered[mid], (ordered[np.maximum(mid - 1, lo)] + ordered[mid]) / 2)
        return round(median(medians.tolist()), 3)

    def durations(self, fallback: float, pinned: float | None = None) -> list[np.ndarray]:
        """durations() of each stream, as views of one array (`seconds`)."""
        out = self.seconds(fallback, pinned)
        bounds = self.offsets.tolist()
        return [out[lo:hi] for lo, hi in zip(bounds, bounds[1:])]

    def seconds(self, fallback: float, pinned: float | None = None) -> np.ndarray:
        """durations() of every stream, in one array beside the timestamps."""
        out = np.empty(len(self.ts))
        if pinned:
            out[:] = float(pinned)
        else:
            first = np.full(len(self.n), float(fallback))   # a lone sample counts the fallback
            multi = self.multi
            if len(multi):
                lo, c = self.start[multi], self.count[multi]
                widest = np.maximum.reduceat(self.gaps, lo)
                regular = ((widest - np.minimum.reduceat(self.gaps, lo)) <= 1e-3) & (widest <= STALENESS_SECONDS)
                first[multi] = self.gaps[lo]
                out[:] = np.repeat(first, self.n)
                # the last sample of a regular stream: the median of its last NEIGHBOURS gaps
                end = lo + c
                a, b, z = (self.gaps[np.maximum(end - k, lo)] for k in (3, 2, 1))
                three = np.sort(np.vstack([a, b, z]), axis=0)[1]
                last = np.where(c >= 3, three, np.where(c == 2, (b + z) / 2, z))
                out[self.offsets[multi + 1] - 1] = np.where(regular, last, out[self.offsets[multi + 1] - 1])
                if not regular.all():
                    self._irregular(out, multi[~regular], fallback)
            else:
                out[:] = np.repeat(first, self.n)
        return out


    def _irregular(self, out: np.ndarray, streams: np.ndarray, fallback: float) -> None:
        """durations() of the irregular streams (at least two samples each, or a silence), the
        rules applied to all their samples at once: each window of gaps lies inside its own
        stream's run, so window_medians over the chunk's gaps gives the very floats it gives
        per stream."""
        n = self.n[streams]
        first = self.offsets[streams]
        j = np.repeat(first, n) + (np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n))   # each sample
        i = j - np.repeat(first, n)                          # its place in its stream
        gap0 = np.repeat(self.start[streams], n)             # its stream's first gap
        g = gap0 + i                                         # its own gap (none for the last sample)
        lo, hi = run_windows(self.gaps, g, gap0, gap0 + np.repeat(self.count[streams], n))
        before_start = np.maximum(lo, g - NEIGHBOURS)
        spacing_before = window_medians(self.gaps, before_start, g - before_start)
        spacing_after = window_medians(self.gaps, g + 1, np.clip(hi - (g + 1), 0, NEIGHBOURS))
        ends_run = g == hi                                   # the stream's last sample, or one before a silence
        inner = ~ends_run
        gap = self.gaps[g[inner]]
        before, after = spacing_before[inner], spacing_after[inner]
        loc = np.where(np.isnan(before), after, before)
        loc = np.where(np.isnan(loc), gap, loc)              # two samples only
        widest = np.fmax(np.fmax(before, after), loc)
        limit = np.minimum(STALENESS_SECONDS, np.maximum(MIN_STALE_SECONDS, GAP_FACTOR * widest))
        out[j[inner]] = np.where(gap <= limit, gap, np.minimum(loc, gap))
        last = spacing_before[ends_run]
        out[j[ends_run]] = np.where(np.isnan(last), float(fallback), last)


def window_medians(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """statistics.median of values[start:start + count] for each (start, count); NaN where
    count is 0. The same additions and halvings as statistics.median, so the same floats."""
    width = int(counts.max()) if len(counts) else 0
    out = np.full(len(starts), np.nan)
    if width == 0:
        return out
    k = np.arange(width)
    idx = starts[:, None] + k
    valid = k < counts[:, None]
    window = np.where(valid, values[np.clip(idx, 0, len(values) - 1)], np.inf)
    window.sort(axis=1)
    has = counts > 0
    rows = np.flatnonzero(has)
    c = counts[has]
    mid = c // 2
    odd = window[rows, mid]
    even = (window[rows, np.maximum(mid - 1, 0)] + window[rows, mid]) / 2
    out[rows] = np.where(c % 2 == 1, odd, even)
    return out


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


class Coverage:
    """The union of the time intervals already counted for one device (sorted, disjoint)."""

    __slots__ = ("starts", "ends")

    def __init__(self):
        self.starts = np.empty(0)
        self.ends = np.empty(0)

    def claim(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """For each span [a, b) of a time-ordered list (arrays of starts and ends): the seconds
        of it not yet covered, the overlaps with earlier intervals added in time order. Then
        all the spans count as covered."""
        starts, ends = self.starts, self.ends
        first = np.searchsorted(ends, a, side="right")              # the first interval ending after a
        stop = np.maximum(first, np.searchsorted(starts, b, side="left"))   # ... up to those starting before b
        overlap = np.zeros(len(a))
        one = np.flatnonzero(stop - first == 1)
        k = first[one]
        overlap[one] = np.minimum(b[one], ends[k]) - np.maximum(a[one], starts[k])
        for i in np.flatnonzero(stop - first > 1).tolist():   # a span over several intervals
            total = 0.0
            for k in range(int(first[i]), int(stop[i])):
                total += min(b[i], ends[k]) - max(a[i], starts[k])
            overlap[i] = total
        free = np.maximum(0.0, (b - a) - overlap)
        self._union(a, b)
        return free

    def _union(self, a, b):
        s = np.concatenate([self.starts, a])
        e = np.concatenate([self.ends, b])
        order = np.argsort(s, kind="stable")   # on a tie the interval already held comes first
        s, e = s[order], e[order]
        reach = np.maximum.accumulate(e)
        opens = np.ones(len(s), dtype=bool)
        opens[1:] = s[1:] > reach[:-1]
        closes = np.ones(len(s), dtype=bool)
        closes[:-1] = opens[1:]
        self.starts, self.ends = s[opens], reach[closes]
