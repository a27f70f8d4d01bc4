"""Idle episodes of one device-pod, from the hourly idle stretches ingest keeps (plain Python).

An hour carries the idle run touching its start (prefix), the one touching its end (suffix),
the longest run inside (max_run) and whether it was idle throughout. A run that reaches the
end of an hour continues into the next hour's prefix when the hours are adjacent, as in
`apps.ingest.rollup.merge_idle_runs`; this variant also says where each stretch began, which
is what makes an episode identifiable (one alert per episode). A run strictly inside an hour
(longer than that hour's prefix and suffix) is reported as starting at the hour's start:
its exact position is not kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

HOUR_SECONDS = 3600


@dataclass(frozen=True)
class IdleHour:
    hour_start: int          # epoch seconds
    prefix_seconds: float
    suffix_seconds: float
    max_run_seconds: float
    whole_hour: bool


@dataclass(frozen=True)
class Episode:
    start: int               # epoch seconds (approximate for inner runs: the hour's start)
    idle_seconds: float
    open: bool               # still idle at the end of the last known hour


def idle_episodes(hours: Sequence[IdleHour]) -> list[Episode]:
    """Every idle stretch, in time order; `hours` must be sorted by hour_start."""
    out: list[Episode] = []
    carry_start: int | None = None
    carry_seconds = 0.0
    previous: int | None = None
    for h in hours:
        adjacent = previous is not None and h.hour_start - previous == HOUR_SECONDS
        if carry_start is not None and not adjacent:
            out.append(Episode(carry_start, carry_seconds, False))
            carry_start, carry_seconds = None, 0.0
        if carry_start is not None:
            if h.whole_hour:
                carry_seconds += h.prefix_seconds
                previous = h.hour_start
                continue
            out.append(Episode(carry_start, carry_seconds + h.prefix_seconds, False))
            carry_start, carry_seconds = None, 0.0
        elif h.whole_hour:
            carry_start, carry_seconds = h.hour_start, h.prefix_seconds
            previous = h.hour_start
            continue
        elif h.prefix_seconds > 0:
            out.append(Episode(h.hour_start, h.prefix_seconds, False))
        if h.max_run_seconds > max(h.prefix_seconds, h.suffix_seconds):
            out.append(Episode(h.hour_start, h.max_run_seconds, False))
        if h.suffix_seconds > 0:
            carry_start = h.hour_start + HOUR_SECONDS - int(round(h.suffix_seconds))
            carry_seconds = h.suffix_seconds
        previous = h.hour_start
    if carry_start is not None:
        out.append(Episode(carry_start, carry_seconds, True))
    return out


def long_episodes(hours: Sequence[IdleHour], min_seconds: float) -> list[Episode]:
    return [e for e in idle_episodes(hours) if e.idle_seconds >= min_seconds]
