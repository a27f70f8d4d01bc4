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


class Coverage:
    """The union of the time intervals already counted for one device (sorted, disjoint)."""

    __slots__ = ("starts", "ends")

    def __init__(self):
        self.starts = np.empty(0)
        self.ends = np.empty(0)

    def copy(self) -> "Coverage":
        other = Coverage()
        other.starts, other.ends = self.starts, self.ends   # never changed in place: replaced by _union
        return other

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
