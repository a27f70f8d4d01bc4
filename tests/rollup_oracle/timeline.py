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
on where chunks begin.
"""
from __future__ import annotations

from bisect import bisect_left
from statistics import median
from typing import Sequence

STALENESS_SECONDS = 300.0     # Prometheus' default lookback: no sample stands for longer
MIN_STALE_SECONDS = 120.0     # a gap this short is a missed scrape or a restart, never an absence
GAP_FACTOR = 4.0              # ... and so is a gap of up to four local spacings
NEIGHBOURS = 3                # gaps on each side that estimate the local spacing
LOOKAROUND_SECONDS = 2100     # read this much before and after a chunk (timeline.py says why)


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


def run_of(gaps: Sequence[float], i: int) -> tuple[int, int]:
    """The gaps [lo, hi) of the run sample i belongs to: a silence (a gap longer than
    STALENESS_SECONDS) ends a run, and no spacing is measured across one."""
    lo = i
    while lo > 0 and gaps[lo - 1] <= STALENESS_SECONDS:
        lo -= 1
    hi = i
    while hi < len(gaps) and gaps[hi] <= STALENESS_SECONDS:
        hi += 1
    return lo, hi


def durations(ts: Sequence[float], fallback: float, pinned: float | None = None) -> list[float]:
    """Seconds each sample of one time-ordered stream stands for (docs/accounting.md)."""
    n = len(ts)
    if pinned:
        return [float(pinned)] * n
    if n == 0:
        return []
    if n == 1:
        return [float(fallback)]
    gaps = gaps_of(ts)
    if max(gaps) - min(gaps) <= 1e-3 and max(gaps) <= STALENESS_SECONDS:
        # a regular stream (the common case): every sample counts the one gap; the rules below
        # give exactly this, since a gap is never longer than its own spacings' limit
        return [gaps[0]] * (n - 1) + [median(gaps[-NEIGHBOURS:])]
    out = []
    for i in range(n):
        lo, hi = run_of(gaps, i)
        before = gaps[max(lo, i - NEIGHBOURS):i]
        after = gaps[i + 1:min(hi, i + 1 + NEIGHBOURS)]
        spacing_before = median(before) if before else None
        spacing_after = median(after) if after else None
        if i == hi:
            # the last sample of its run (of the stream, or before a silence): one local spacing,
            # the chunk's interval for a sample alone in its run
            out.append(spacing_before if spacing_before is not None else float(fallback))
            continue
        gap = gaps[i]
        local = spacing_before if spacing_before is not None else spacing_after
        if local is None:   # two samples only
            local = gap
        widest = max(x for x in (spacing_before, spacing_after, local) if x is not None)
        limit = min(STALENESS_SECONDS, max(MIN_STALE_SECONDS, GAP_FACTOR * widest))
        out.append(gap if gap <= limit else min(local, gap))
    return out


def merge_copies(streams: Sequence[Sequence[tuple[float, float]]], lone: float) -> list[tuple[float, float]]:
    """One stream from several copies of it, listed in priority order (docs/accounting.md).

    The first copy is kept whole; a sample of a later copy is kept only where no kept sample
    lies within one of its own spacings (so only where the earlier copies have a gap): the
    median of the gaps of its run around it, `lone` (the chunk's interval) for a sample alone
    in its run.
    """
    if len(streams) == 1:
        return list(streams[0])
    kept = sorted(streams[0])
    kept_ts = [t for t, _ in kept]
    for stream in streams[1:]:
        ts = [t for t, _ in stream]
        gaps = gaps_of(ts)
        additions = []
        for i, (t, v) in enumerate(stream):
            lo, hi = run_of(gaps, i)
            near = gaps[max(lo, i - NEIGHBOURS):min(hi, i + NEIGHBOURS)]
            spacing = median(near) if near else float(lone)
            j = bisect_left(kept_ts, t)
            close = ((j < len(kept_ts) and kept_ts[j] - t < spacing)
                     or (j < len(kept_ts) and kept_ts[j] == t)
                     or (j > 0 and t - kept_ts[j - 1] < spacing))
            if not close:
                additions.append((t, v))
        if additions:
            kept = sorted(kept + additions)
            kept_ts = [t for t, _ in kept]
    return kept


class Coverage:
    """The union of the time intervals already counted for one device (sorted, disjoint)."""

    __slots__ = ("starts", "ends")

    def __init__(self):
        self.starts: list[float] = []
        self.ends: list[float] = []

    def claim(self, spans: Sequence[tuple[float, float]]) -> list[float]:
        """For each span (start, end) of a time-ordered, non-overlapping list: the seconds of it
        not yet covered. Then all the spans count as covered."""
        starts, ends = self.starts, self.ends
        free = []
        j = 0
        m = len(starts)
        for a, b in spans:
            while j < m and ends[j] <= a:
                j += 1
            overlap = 0.0
            k = j
            while k < m and starts[k] < b:
                overlap += min(b, ends[k]) - max(a, starts[k])
                k += 1
            free.append(max(0.0, (b - a) - overlap))
        self._union(spans)
        return free

    def _union(self, spans):
        merged_s, merged_e = [], []
        i = j = 0
        a_s, a_e = self.starts, self.ends
        while i < len(a_s) or j < len(spans):
            if j >= len(spans) or (i < len(a_s) and a_s[i] <= spans[j][0]):
                s, e = a_s[i], a_e[i]
                i += 1
            else:
                s, e = spans[j]
                j += 1
            if merged_e and s <= merged_e[-1]:
                if e > merged_e[-1]:
                    merged_e[-1] = e
            else:
                merged_s.append(s)
                merged_e.append(e)
        self.starts, self.ends = merged_s, merged_e
