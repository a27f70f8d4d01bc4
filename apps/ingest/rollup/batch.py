"""A chunk's usage records, summed all at once: the samples that count, stream by stream, then
every record's sums and idle stretches with numpy (docs/performance.md); what each sample adds
is in docs/accounting.md. Split from devices.py, which decides which samples count.
"""
from __future__ import annotations

import numpy as np

from .arrays import idle_runs, sequential_sums
from .records import HOUR_SECONDS, RollupConfig, UsageRecord


class _Acc:
    __slots__ = ("rec", "marks", "present", "index")

    def __init__(self, rec):
        self.rec = rec
        self.index = -1
        self.marks = []     # (ts, seconds, idle?) with None for unknown utilization
        self.present = 0.0  # wall-clock seconds the record's samples stand for


class _Batch:
    """The samples that count, stream by stream, and the records they add to
    (docs/accounting.md for what each adds)."""

    def __init__(self, accs: dict):
        self.accs = accs
        self.order: list[_Acc] = []        # records by index
        self.streams_of: list[int] = []    # how many stream segments fed each record
        self.heads: list[tuple] = []       # per stream: (stream, device)
        self.parts: list[tuple] = []       # per stream: arrays of the samples that count
        self.shares: list[tuple] = []      # per stream: (share, used share)
        self.meta: list[tuple] = []        # per stream: (samples, scale, workload?, fraction, MIG?)

    def add(self, st, d: dict, counts, seconds, share, used_share):
        """Adds the samples of one stream (devices.py's `_Stream`, which imports this module) that
        count, with the device `d` they were read from."""
        at = np.flatnonzero(counts)
        if not len(at):
            return
        self.heads.append((st, d))
        self.parts.append((st.ts[at], st.values[at], seconds[at]))
        # shares: one number for a whole-device stream, one per sample for a time-sliced pod
        self.shares.append((share, used_share))
        self.meta.append((len(at), st.scale, bool(st.namespace), d["gpu_fraction"], bool(d["mig_profile"])))

    def _records(self, ts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Each sample's record: its stream's (device, namespace, pod) and its hour, the records
        made in the order their first samples were added; counts the stream segments (a stream's
        run of samples in one hour) that feed each record."""
        streams: dict[tuple, int] = {}
        of_part = np.array([streams.setdefault((st.key, st.namespace, st.pod), len(streams))
                            for st, _ in self.heads], dtype=np.int64)
        part = np.repeat(np.arange(len(lengths)), lengths)
        hours = (ts // HOUR_SECONDS) * HOUR_SECONDS
        cut = np.ones(len(ts), dtype=bool)
        cut[1:] = (part[1:] != part[:-1]) | (hours[1:] != hours[:-1])
        first_of_segment = np.flatnonzero(cut)
        seg_hour = hours[first_of_segment]
        hour_index = ((seg_hour - seg_hour.min()) // HOUR_SECONDS).astype(np.int64)
        code = of_part[part[first_of_segment]] * (int(hour_index.max()) + 1) + hour_index
        _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
        made = np.argsort(first)                     # records in the order they were first met
        rank = np.empty(len(made), dtype=np.int64)
        rank[made] = np.arange(len(made))
        seg_record = rank[inverse.ravel()]
        self.streams_of = np.bincount(seg_record, minlength=len(made)).tolist()
        for seg in first[made].tolist():
            st, d = self.heads[int(part[first_of_segment[seg]])]
            hour = int(seg_hour[seg])
            acc = self.accs[(st.key, st.namespace, st.pod, hour)] = _Acc(UsageRecord(
                device_key=st.key, namespace=st.namespace, pod=st.pod, hour_start=hour, node=d["host"],
                gpu_model=d["model_name"], mig_profile=d["mig_profile"], gpu_fraction=d["gpu_fraction"],
                dra_claim=st.claim,
            ))
            acc.index = len(self.order)
            self.order.append(acc)
        return seg_record[np.cumsum(cut) - 1]

    def settle(self, cfg: RollupConfig) -> tuple[int, int]:
        """Every record's sums and idle runs; (clamped samples, samples counted)."""
        if not self.parts:
            return 0, 0
        ts, value, seconds = (np.concatenate(col) for col in zip(*self.parts))
        record = self._records(ts, np.array([m[0] for m in self.meta], dtype=np.int64))
        self.heads = []
        lengths, scale, named, fraction, mig = (np.array(col) for col in zip(*self.meta))
        scale, named, fraction, mig = (np.repeat(col, lengths) for col in (scale, named, fraction, mig))
        share, used_share = (self._per_sample(col, lengths) for col in zip(*self.shares))
        self.parts, self.shares, self.meta = [], [], []
        n = len(self.order)
        with np.errstate(invalid="ignore"):
            known = named & np.isfinite(value)
            util = value * scale
            clamped = known & ((util < 0.0) | (util > 1.0))
            util = np.minimum(1.0, np.maximum(0.0, util))
            idle = known & (util < cfg.idle_threshold)
            gpu = seconds * share
            sums = sequential_sums(record, np.vstack([
                gpu, seconds,
                np.where(mig, seconds * (share / fraction), 0.0),
                np.where(known, seconds * used_share * util, 0.0),
                np.where(idle, gpu, 0.0),
            ]), n)
        sample_count = np.bincount(record, minlength=n)
        unknown = np.bincount(record, weights=named & ~known, minlength=n)
        for i, acc in enumerate(self.order):
            rec = acc.rec
            rec.sample_count += int(sample_count[i])
            rec.gpu_seconds = float(sums[0, i])
            acc.present = float(sums[1, i])
            rec.mig_seconds = float(sums[2, i])
            rec.used_gpu_seconds = float(sums[3, i])
            rec.idle_gpu_seconds = float(sums[4, i])
            rec.unknown_util_samples += int(unknown[i])
        self._idle(record, ts, seconds, named, known, idle)
        return int(clamped.sum()), len(record)

    @staticmethod
    def _per_sample(values, lengths) -> np.ndarray:
        """Per-stream numbers (a float, or an array of one per sample) as one per sample."""
        arrays = [i for i, v in enumerate(values) if isinstance(v, np.ndarray)]
        out = np.repeat(np.array([np.nan if isinstance(v, np.ndarray) else float(v) for v in values]), lengths)
        if arrays:
            offsets = np.concatenate([[0], np.cumsum(lengths)])
            for i in arrays:
                out[offsets[i]:offsets[i + 1]] = values[i]
        return out

    def _idle(self, record, ts, seconds, named, known, idle):
        """Idle stretches of the records with a workload; a record fed by more than one stream
        (or whose samples share an instant) takes the per-record loop, which sorts its marks."""
        order = np.argsort(record, kind="stable")
        order = order[named[order]]
        record, ts, seconds, known, idle = record[order], ts[order], seconds[order], known[order], idle[order]
        n = len(self.order)
        tangled = np.array(self.streams_of) > 1
        repeat = np.flatnonzero((record[1:] == record[:-1]) & (ts[1:] <= ts[:-1]))
        tangled[record[repeat + 1]] = True
        simple = ~tangled[record]
        hour_start = np.array([acc.rec.hour_start for acc in self.order], dtype=float)
        longest, prefix, suffix, whole = idle_runs(record[simple], ts[simple], seconds[simple], idle[simple],
                                                   hour_start, n)
        for i in np.unique(record[simple]).tolist():
            rec = self.order[i].rec
            rec.idle_max_run_seconds = float(longest[i])
            rec.idle_prefix_seconds = float(prefix[i])
            rec.idle_suffix_seconds = float(suffix[i])
            rec.idle_whole_hour = bool(whole[i])
        for i in np.unique(record[~simple]).tolist():
            acc = self.order[i]
            at = np.flatnonzero(record == i)
            acc.marks = [(t, s, (bool(b) if k else None)) for t, s, k, b in
                         zip(ts[at].tolist(), seconds[at].tolist(), known[at].tolist(), idle[at].tolist())]
            _idle_runs(acc)


def _idle_runs(acc: _Acc) -> None:
    """Idle stretches within the hour, joinable with the neighbouring hours' stretches."""
    rec = acc.rec
    marks = sorted(acc.marks)
    if not marks:
        return
    hour_end = rec.hour_start + HOUR_SECONDS
    runs = []  # [first index, last index, seconds]
    current = None
    previous_end = None
    for i, (ts, seconds, idle) in enumerate(marks):
        contiguous = previous_end is not None and ts - previous_end <= 0.5 * seconds + 1e-6
        if idle:
            if current is None or not contiguous:
                if current is not None:
                    runs.append(current)
                current = [i, i, 0.0]
            current[1] = i
            current[2] += seconds
        elif current is not None:
            runs.append(current)
            current = None
        previous_end = ts + seconds
    if current is not None:
        runs.append(current)
    lengths = [r[2] for r in runs]
    rec.idle_max_run_seconds = max(lengths, default=0.0)
    first_ts, first_seconds = marks[0][0], marks[0][1]
    if runs and runs[0][0] == 0 and first_ts - rec.hour_start <= first_seconds + 1e-6:
        rec.idle_prefix_seconds = lengths[0]
    last_ts, last_seconds = marks[-1][0], marks[-1][1]
    if runs and runs[-1][1] == len(marks) - 1 and hour_end - (last_ts + last_seconds) <= 0.5 * last_seconds + 1e-6:
        rec.idle_suffix_seconds = lengths[-1]
    rec.idle_whole_hour = (
        len(runs) == 1 and rec.idle_prefix_seconds > 0 and rec.idle_suffix_seconds > 0
        and runs[0][0] == 0 and runs[0][1] == len(marks) - 1
    )
