"""Every usage figure a person sees, defined once (docs/figures.md).

Pages, API answers, CSV and XLSX exports, alerts and quota advice all turn seconds into what
they show by calling these functions, so no two of them can disagree (docs/conventions.md, "One home per concept"). A line's
cost is the other figure with one home: `core.ratecard.billed_cost`.

Plain Python, no Django; pinned by hand-computed cases in tests/accounting/core/test_measures.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Sequence

SECONDS_PER_HOUR = 3600.0
HOUR_SECONDS = 3600          # one hourly rollup row, in epoch seconds
SHOWN_DIGITS = 6             # API answers and exports: hours and ratios to 6 decimal places


# ---------------------------------------------------------------- hours

def hours_of(seconds) -> float:
    """Seconds of a stretch of time as hours, unrounded: 5400 -> 1.5 (hours at a quota, lag)."""
    return float(seconds) / SECONDS_PER_HOUR


def gpu_hours(seconds) -> float:
    """GPU-seconds as GPU-hours (or MIG instance-seconds as instance-hours), unrounded:
    5400 → 1.5. Charts and sums use this; what is shown as a number goes through
    `shown_hours`."""
    return float(seconds) / SECONDS_PER_HOUR


def shown_hours(seconds) -> float:
    """GPU-hours as API answers and exports give them: rounded to 6 decimal places
    (1 s = 0.000278 h). Pages format the same value to 2 places."""
    return round(gpu_hours(seconds), SHOWN_DIGITS)


# ---------------------------------------------------------------- ratios

def share(part, whole) -> float | None:
    """part ÷ whole, or None when the whole is 0 or less: with nothing to divide there is
    no ratio, which is not the same as a ratio of 0. Floats or Decimals (not mixed)."""
    if whole <= 0:
        return None
    return float(part / whole)


def efficiency(used_gpu_seconds, allocated_gpu_seconds) -> float | None:
    """Used GPU-seconds ÷ allocated GPU-seconds over the same rows: 0.0–1.0. None (shown
    "–" on pages, null in the API and empty in CSV) when nothing was allocated, and for
    adjustment lines whose allocated seconds are negative."""
    return share(used_gpu_seconds, allocated_gpu_seconds)


def shown_ratio(ratio: float | None) -> float | None:
    """A ratio as API answers and exports give it: 6 decimal places; None stays None."""
    return None if ratio is None else round(ratio, SHOWN_DIGITS)


def shown_efficiency(used_gpu_seconds, allocated_gpu_seconds) -> float | None:
    return shown_ratio(efficiency(used_gpu_seconds, allocated_gpu_seconds))


def percent_text(ratio: float | None, digits: int = 1) -> str:
    """A ratio as pages show it: 0.4 → "40.0 %", None → "–"."""
    if ratio is None:
        return "–"
    return f"{ratio * 100:.{int(digits)}f} %"


# ---------------------------------------------------------------- idle stretches

class IdleHour(NamedTuple):
    """What ingest keeps of one device-pod-hour's idle samples (UsageHour's idle_* columns).
    A plain (hour_start, prefix, suffix, max_run, whole_hour) tuple reads the same."""
    hour_start: int          # epoch seconds
    prefix_seconds: float    # the idle run that touches the hour's start
    suffix_seconds: float    # the idle run that touches the hour's end
    max_run_seconds: float   # the longest idle run inside the hour
    whole_hour: bool         # one idle run from the hour's start to its end


@dataclass(frozen=True)
class IdleStretch:
    start: int               # epoch seconds (a run strictly inside an hour: the hour's start)
    idle_seconds: float
    open: bool               # still idle at the end of the last hour given


def continues(previous_hour_start: int | None, hour_start: int) -> bool:
    """The join rule: a run reaching the end of an hour goes on into the next hour's prefix
    only when that hour follows directly. A missing hour (no samples, or nothing allocated)
    is a gap, and a gap ends the stretch."""
    return previous_hour_start is not None and hour_start - previous_hour_start == HOUR_SECONDS


def idle_stretches(hours: Iterable[IdleHour | tuple], min_seconds: float = 0.0) -> list[IdleStretch]:
    """Every idle stretch of one device-pod, in time order, from its hours sorted by start;
    only those lasting at least `min_seconds`.

    Runs are joined across hours by `continues`. A run strictly inside an hour (longer than
    that hour's prefix and suffix) is its own stretch, placed at the hour's start: ingest
    keeps its length, not its position.
    """
    out: list[IdleStretch] = []
    carry_start: int | None = None
    carry_seconds = 0.0
    previous: int | None = None
    for hour_start, prefix, suffix, max_run, whole in hours:
        if carry_start is not None and not continues(previous, hour_start):
            out.append(IdleStretch(carry_start, carry_seconds, False))
            carry_start, carry_seconds = None, 0.0
        previous = hour_start
        if carry_start is not None:
            if whole:
                carry_seconds += prefix
                continue
            out.append(IdleStretch(carry_start, carry_seconds + prefix, False))
            carry_start, carry_seconds = None, 0.0
        elif whole:
            carry_start, carry_seconds = hour_start, prefix
            continue
        elif prefix > 0:
            out.append(IdleStretch(hour_start, prefix, False))
        if max_run > max(prefix, suffix):
            out.append(IdleStretch(hour_start, max_run, False))
        if suffix > 0:
            carry_start = hour_start + HOUR_SECONDS - int(round(suffix))
            carry_seconds = suffix
    if carry_start is not None:
        out.append(IdleStretch(carry_start, carry_seconds, True))
    return [s for s in out if s.idle_seconds >= min_seconds]


def longest_idle_seconds(hours: Iterable[IdleHour | tuple]) -> float:
    """The longest idle stretch of one device-pod (0.0 when it never idled)."""
    return max((s.idle_seconds for s in idle_stretches(hours)), default=0.0)


class IdleBlock(NamedTuple):
    """What the idle stretches of a run of one device-pod's hours (an hour, a day, a window)
    need to be joined with the hours before and after it, exactly as `idle_stretches` joins
    hours: the stretch that would continue one coming in (`head`), the one still open at its
    end (`tail`), the longest of the others (`inner`), and whether the run is one idle stretch
    from its first hour's start to its last hour's end (`whole`: `head` is then all of it).
    A day's block is what the per-pod day summary stores (docs/performance.md, "The longest reads")."""
    first: int               # epoch seconds of the first hour
    last: int                # epoch seconds of the last hour
    head: float
    tail: float
    inner: float
    whole: bool


def idle_block(hour: IdleHour | tuple) -> IdleBlock:
    """One hour as a block."""
    hour_start, prefix, suffix, max_run, whole = hour
    if whole:
        return IdleBlock(hour_start, hour_start, prefix, 0.0, 0.0, True)
    # the longest run counts apart only when it is neither the prefix nor the suffix (as in `idle_stretches`)
    return IdleBlock(hour_start, hour_start, prefix, suffix, max_run if max_run > max(prefix, suffix) else 0.0, False)


def join_idle_blocks(a: IdleBlock, b: IdleBlock) -> IdleBlock:
    """The block of `a`'s hours followed by `b`'s (b starts after a ends). A run reaching the
    end of `a` goes on into `b` only when `b`'s first hour follows `a`'s last directly (`continues`)."""
    if continues(a.last, b.first):
        if a.whole and b.whole:
            return IdleBlock(a.first, b.last, a.head + b.head, 0.0, 0.0, True)
        if a.whole:
            return IdleBlock(a.first, b.last, a.head + b.head, b.tail, b.inner, False)
        if b.whole:
            return IdleBlock(a.first, b.last, a.head, a.tail + b.head, a.inner, False)
        return IdleBlock(a.first, b.last, a.head, b.tail, max(a.inner, a.tail + b.head, b.inner), False)
    # a gap: a's open stretch ends with a; b's head starts afresh
    closed = max(a.inner, 0.0 if a.whole else a.tail)
    if b.whole:
        return IdleBlock(a.first, b.last, a.head, b.head, closed, False)
    return IdleBlock(a.first, b.last, a.head, b.tail, max(closed, b.head, b.inner), False)


def fold_idle_blocks(blocks: Iterable[IdleBlock]) -> IdleBlock | None:
    """The blocks of one device-pod, sorted by their first hour, as one block (None for none)."""
    out = None
    for b in blocks:
        out = b if out is None else join_idle_blocks(out, b)
    return out


def block_longest_idle_seconds(block: IdleBlock | None) -> float:
    """The longest idle stretch in a block: `longest_idle_seconds` of its hours."""
    if block is None:
        return 0.0
    return max(block.head, block.tail, block.inner)


def percentile(values: Sequence[float], p: float) -> float:
    """Linear interpolation between closest ranks (type 7); 0 for no values."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"percentile {p} is not within 0..1")
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * p
    below = math.floor(position)
    above = math.ceil(position)
    if below == above:
        return float(ordered[below])
    weight = position - below
    return ordered[below] * (1.0 - weight) + ordered[above] * weight
