"""The roll-up's chunk-wide steps give, bit for bit, what their per-stream forms give.

docs/performance.md ("A chunk's streams at once") says why each exists: durations of the
irregular streams, merges of copies whose order cannot matter, and which devices need tiling
are each worked out for the whole chunk in one numpy pass. Each is compared here with the
per-stream function (or the per-sample oracle in tests/rollup_oracle/) on random streams, and
a hand-made case shows the chunk-wide step is taken at all.
"""
import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.ingest.rollup.devices import _crossing_devices
from apps.ingest.rollup.copies import merge_copy_columns, spaced_merges
from apps.ingest.rollup.timeline import Coverage, StreamGaps
from tests.ingest.test_rollup_matches_the_per_sample_loops import instants
from tests.rollup_oracle import timeline as oracle_timeline

T0 = 1_700_000_000.0
GAPS = st.lists(st.sampled_from([15.0, 30.0, 30.0, 60.0, 60.0, 60.0, 0.001, 1.5, 29.998, 120.0, 400.0, 7.25]),
                min_size=0, max_size=30)


def bits(a) -> list:
    return np.asarray(a, dtype=float).view(np.int64).tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(GAPS, st.sampled_from([0.0, 0.123, 7.0])), min_size=1, max_size=6),
       st.sampled_from([30.0, 60.0, 17.5]))
def test_durations_of_a_chunk_equal_each_streams_own(streams, fallback):
    series = [instants(T0 + offset, gaps) for gaps, offset in streams]
    ts = np.array([t for s in series for t in s])
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in series])])
    seconds = StreamGaps(ts, offsets).seconds(fallback)
    for s, lo, hi in zip(series, offsets[:-1], offsets[1:]):
        assert bits(seconds[lo:hi]) == bits(oracle_timeline.durations(s, fallback, None))


def copies_on_a_grid(draw_copies):
    """(timestamps, values) arrays of each copy, and the copies' times as given."""
    out = []
    for start, count, step, reading in draw_copies:
        ts = np.array([T0 + 60.0 * (start + step * i) for i in range(count)])
        values = np.array([reading(t) for t in ts.tolist()])
        out.append((ts, values))
    return out


READINGS = [lambda t: 300.0 + (t % 7), lambda t: 300.0 + (t % 7), lambda t: 250.0, lambda t: float(t % 11) - 5.0]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(-20, 120), st.integers(0, 40), st.sampled_from([1, 1, 1, 2]),
                                   st.sampled_from(READINGS)), min_size=1, max_size=5),
                min_size=1, max_size=5))
def test_merges_where_order_cannot_matter_equal_the_copy_by_copy_merge(groups):
    """Copies on one 60 s grid (successive series of a GPU, a board's power on its MIG instances),
    some overlapping, some repeating a reading, some with a missed scrape (step 2), some
    disagreeing: every group merged at once equals the copy-by-copy merge in every order."""
    copies, members = [], []
    for group in groups:
        made = copies_on_a_grid(group)
        members.append(list(range(len(copies), len(copies) + len(made))))
        copies.extend(made)
    check_merged_at_once(copies, members)


def check_merged_at_once(copies, members, lone=60.0):
    """Every group spaced_merges merges at once equals the copy-by-copy merge in every order (up
    to six orders), and the per-sample oracle's; returns how many groups it merged at once."""
    ts = np.concatenate([c[0] for c in copies])
    values = np.concatenate([c[1] for c in copies])
    offsets = np.concatenate([[0], np.cumsum([len(c[0]) for c in copies])])
    merged = spaced_merges(ts, values, offsets, members, lone)
    for g, group in enumerate(members):
        if g not in merged:
            continue
        assert len(group) > 1
        for order in itertools.islice(itertools.permutations(group), 6):
            want_ts, want_vs = merge_copy_columns([copies[k] for k in order], lone)
            assert bits(merged[g][0]) == bits(want_ts) and bits(merged[g][1]) == bits(want_vs)
            pairs = [list(zip(copies[k][0].tolist(), copies[k][1].tolist())) for k in order]
            assert list(zip(merged[g][0].tolist(), merged[g][1].tolist())) == oracle_timeline.merge_copies(pairs, lone)
    return len(merged)


HOLES = st.lists(st.sampled_from([30.0, 30.0, 30.0, 60.0, 29.5, 90.0, 600.0, 3000.0, 10000.0]), min_size=0, max_size=14)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from([0.0, 30.0, 60.0, 90.0, 15.0, 3030.0, 10030.0]), HOLES,
                                   st.sampled_from(READINGS)), min_size=1, max_size=4),
                min_size=1, max_size=4))
def test_merges_of_irregular_copies_equal_the_copy_by_copy_merge(groups):
    """Copies with their own irregular gaps — holes of up to 10,000 s, as an idle series has while
    pods hold its GPU, an odd 29.5 s or 90 s — starting at various instants: every group
    merged at once (each sample's own spacing kept clear of the other copies) equals the
    copy-by-copy merge in every order."""
    copies, members = [], []
    for group in groups:
        made = []
        for offset, gaps, reading in group:
            ts = np.array(instants(T0 + offset, gaps))
            made.append((ts, np.array([reading(t) for t in ts.tolist()])))
        members.append(list(range(len(copies), len(copies) + len(made))))
        copies.extend(made)
    check_merged_at_once(copies, members)


def test_an_idle_series_around_pods_is_merged_at_once_only_where_no_spacing_is_crossed():
    """Hand-made (the bench's pod churn): an idle series at 30 s with a 10,000 s hole while two
    pods hold the GPU in turn, each pod's series 30 s apart from the idle samples around it —
    merged at once (the hole is not the idle samples' spacing: their median gap is 30 s). Then a
    pod whose first sample comes 10 s after an idle one, within its spacing: left to the
    copy-by-copy merge, which keeps the idle sample and drops the pod's."""
    def series(start, count, step=30.0):
        ts = T0 + start + step * np.arange(count)
        return ts, 200.0 + (ts - T0) / 30.0
    idle = np.concatenate([series(0, 10)[0], series(10_290, 10)[0]])      # 0–270 s, then 10,290–10,560 s
    copies = [(idle, 200.0 + (idle - T0) / 30.0), series(300, 170), series(5_400, 163)]   # 300–5,370, 5,400–10,260
    assert check_merged_at_once(copies, [[0, 1, 2]]) == 1
    late = [(idle, 200.0 + (idle - T0) / 30.0), series(280, 170), series(5_400, 163)]     # the first pod at 280 s
    assert check_merged_at_once(late, [[0, 1, 2]]) == 0


def test_a_gpus_successive_series_and_a_boards_repeated_power_are_merged_at_once():
    """Hand-made: an idle series, then a pod's, then idle again, 60 s apart on one grid (merged at
    once: the union); two MIG instances repeating the board's power at shared instants (the
    union); one copy with a lone sample and one whose copies disagree (left to the copy-by-copy
    merge)."""
    def arrays(minutes, value=lambda m: 100.0 + m):
        ts = np.array([T0 + 60.0 * m for m in minutes])
        return ts, np.array([value(m) for m in minutes])

    copies = [arrays(range(0, 10)), arrays(range(10, 25)), arrays(range(25, 30)),     # group 0: successive
              arrays(range(0, 20)), arrays(range(5, 30)),                             # group 1: repeated power
              arrays(range(0, 10)), arrays([12]),                                     # group 2: a lone sample
              arrays(range(0, 10)), arrays(range(5, 15), value=lambda m: 7.0)]        # group 3: disagreeing
    ts = np.concatenate([c[0] for c in copies])
    values = np.concatenate([c[1] for c in copies])
    offsets = np.concatenate([[0], np.cumsum([len(c[0]) for c in copies])])
    merged = spaced_merges(ts, values, offsets, [[0, 1, 2], [3, 4], [5, 6], [7, 8]], 60.0)
    assert sorted(merged) == [0, 1]
    assert merged[0][0].tolist() == [T0 + 60.0 * m for m in range(30)]
    assert merged[1][1].tolist() == [100.0 + m for m in range(30)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), GAPS, st.sampled_from([0.0, 30.0, 61.0, 600.0, 1800.0]),
                          st.sampled_from([1.0, 1.0, 0.5, 1.25])), min_size=1, max_size=8))
def test_devices_left_untiled_have_no_span_that_tiling_would_cut(streams):
    """On a device `_crossing_devices` leaves out, claiming its streams' spans in turn (what tiling
    does) takes every span whole: the free seconds equal the spans' lengths."""
    heads, ts_parts, sec_parts = [], [], []
    for device, gaps, offset, stretch in streams:
        ts = instants(T0 + offset, gaps)
        seconds = [g * stretch for g in gaps] + [30.0]
        heads.append(((f"GPU-{device}", ""), {}, "ns", f"p{len(heads)}", 1.0, False))
        ts_parts.append(ts)
        sec_parts.append(seconds)
    ts_all = np.array([t for p in ts_parts for t in p])
    sec_all = np.array([s for p in sec_parts for s in p])
    offsets = np.concatenate([[0], np.cumsum([len(p) for p in ts_parts])])
    crossing = _crossing_devices(heads, ts_all, sec_all, offsets)
    for device in {h[0] for h in heads} - crossing:
        coverage = Coverage()
        for h, ts, seconds in zip(heads, ts_parts, sec_parts):
            if h[0] != device:
                continue
            a = np.array(ts)
            b = a + np.array(seconds)
            assert bits(coverage.claim(a, b)) == bits(b - a)


def test_only_a_device_whose_streams_overlap_is_tiled():
    """Hand-made: GPU-0's pod ends where idle begins (touching spans, not crossing); GPU-1's
    second pod starts 30 s before the first one's last sample ends."""
    heads = [(("GPU-0", ""), {}, "ml", "a", 1.0, False), (("GPU-0", ""), {}, "", "", 1.0, False),
             (("GPU-1", ""), {}, "ml", "b", 1.0, False), (("GPU-1", ""), {}, "ml", "c", 1.0, False)]
    ts = np.array([T0, T0 + 60, T0 + 120, T0 + 180, T0, T0 + 60, T0 + 90, T0 + 150])
    seconds = np.full(len(ts), 60.0)
    offsets = np.array([0, 2, 4, 6, 8])
    assert _crossing_devices(heads, ts, seconds, offsets) == {("GPU-1", "")}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, math.nan, math.inf])),
                max_size=40))
def test_first_maxima_equal_the_loop(pairs):
    """The largest reading per group as the loop keeps it: the first of equal ones (0.0 or -0.0,
    whichever came first), NaN only where it came first."""
    from apps.ingest.rollup.arrays import first_maxima

    loop: dict[int, float] = {}
    for g, v in pairs:
        loop[g] = v if g not in loop else max(loop[g], v)
    got = first_maxima(np.array([g for g, _ in pairs], dtype=np.int64), np.array([v for _, v in pairs]), 5)
    for g in range(5):
        want = loop.get(g, math.nan)
        have = float(got[g])
        assert (math.isnan(want) and math.isnan(have)) or (
            have == want and math.copysign(1, have) == math.copysign(1, want)), (g, want, have, pairs)

