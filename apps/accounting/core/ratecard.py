"""The rate card as pure data: the hourly rate in force for a GPU model, MIG profile and price class
on a day, and a cost from a rate and billed seconds (docs/figures.md, "Cost"). No Django.

Cost of a usage cell = billed hours x the rate in force on the cell's billing-zone day for its
(GPU model, MIG profile, price class):
- a whole GPU, or a MIG instance whose profile has no rate of its own: the model's rate per
  GPU-hour x allocated GPU-hours (MIG GPU-seconds already carry the fraction, so this *is*
  "parent rate x fraction x instance-hours");
- a MIG instance whose profile has a rate: that rate x instance-hours (raw MIG seconds).
No rate: the line is unpriced (cost None, never 0).
"""
from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

SECONDS_PER_HOUR = Decimal(3600)
BASIS_PROFILE = "mig_profile"
BASIS_MODEL = "gpu_model"

# ---------------------------------------------------------------- rates

@dataclass(frozen=True)
class RateEntry:
    gpu_model: str
    mig_profile: str
    price_class: str
    hourly_rate: Decimal
    currency: str
    effective_from: date


class RateCard:
    """Look-ups of the rate in force on a day; built once per report from all rates."""

    def __init__(self, entries):
        by_key = defaultdict(list)
        for e in entries:
            by_key[(e.gpu_model, e.mig_profile, e.price_class)].append(e)
        self._entries = {k: sorted(v, key=lambda e: e.effective_from) for k, v in by_key.items()}
        self._dates = {k: [e.effective_from for e in v] for k, v in self._entries.items()}
        self._all_dates = sorted({e.effective_from for v in self._entries.values() for e in v})

    def epoch(self, day) -> int:
        """Which stretch of the card `day` lies in: two days of the same epoch (no rate takes
        effect after the first and on or before the second) have the same rate for every key."""
        return bisect_right(self._all_dates, day)

    def _in_force(self, key, day):
        dates = self._dates.get(key)
        if not dates:
            return None
        i = bisect_right(dates, day) - 1
        return self._entries[key][i] if i >= 0 else None

    def lookup(self, gpu_model, mig_profile, price_class, day):
        """(RateEntry, basis) or None: the profile's own rate first, else the parent model's."""
        if mig_profile:
            entry = self._in_force((gpu_model, mig_profile, price_class), day)
            if entry is not None:
                return entry, BASIS_PROFILE
        entry = self._in_force((gpu_model, "", price_class), day)
        return (entry, BASIS_MODEL) if entry is not None else None


def billed_cost(hourly_rate: Decimal, billed_seconds: Decimal) -> Decimal:
    """The exact cost of a line: its rate × its billed hours (unrounded)."""
    return hourly_rate * billed_seconds / SECONDS_PER_HOUR


def to_decimal(seconds: float) -> Decimal:
    """A float of seconds as the Decimal it prints as (no binary-expansion noise)."""
    return Decimal(repr(float(seconds)))
