"""Quota advice, in plain Python. No Django here.

Steps, each small and tested with hand-computed numbers (the Kubernetes VPA recommender's
percentile → margin → confidence chain):

1. **Hourly series.** One value per hour of history: the namespace's allocated GPUs that hour,
   Σ UsageHour.gpu_seconds / 3600 over its rows of the hour (a time-average within the hour, so
   a pod holding 8 GPUs for half an hour counts 4). Per MIG profile the value is instances
   (Σ mig_seconds / 3600). Hours without rows count as 0 — an idle namespace is evidence too.
2. **Percentile** — linear interpolation between closest ranks (Hyndman & Fan type 7, numpy's
   default): sort the n values, position = (n − 1) × p, interpolate between the values at
   floor(position) and ceil(position). P50 of [1, 2, 3, 4] = 2.5; P90 = 3.7.
3. **Margin** — × (1 + 15 %): target = ceil(P90 × 1.15), lower = P50 × 1.15, upper = P95 × 1.15.
   A resource used at all in the window gets a target of at least 1: a P90 of 0 (a MIG
   profile used in fewer than a tenth of the hours) must not become a quota of 0 that forbids
   the workload that ran.
4. **Confidence** — with `days` of history (hours / 24): upper × (1 + 1/days),
   lower × max(0, 1 − 1/days). One day of history: upper doubled, lower 0; 28 days: upper
   × 1.0357, lower × 0.9643. Everything is clamped at ≥ 0.
5. **Verdict** against the current hard quota (see `verdict`), and the quota to apply
   (`recommended_quota`): over-provisioned or no quota → the target; under-provisioned → the
   largest of the target, hard × 1.15 rounded up, and hard + 1; ok → the current hard limit, unchanged.
6. **Money freed** per month by applying the recommendation = (hard − recommended) × 730 h ×
   the hourly rate: positive when it lowers the quota, negative when it raises it (what the
   extra room may cost), 0 when it keeps it; a Decimal rounded half-up to the currency's minor
   unit (cents, whole yen; docs/dates-and-money.md); no rate → None ("unpriced"), no quota →
   None (nothing to lower). **Money at stake** is its size, |hard − recommended| × 730 h × rate
   (`Assessment.monthly_money_at_stake`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Sequence

from apps.accounting.core.currencies import minor_unit
from apps.accounting.core.measures import SECONDS_PER_HOUR, efficiency, percentile, share

HOURS_PER_MONTH = 730  # 8760 / 12: the cloud providers' monthly hour count

OVER = "over_provisioned"
UNDER = "under_provisioned"
OK = "ok"
NO_QUOTA = "no_quota"
VERDICTS = (UNDER, OVER, OK, NO_QUOTA)  # worst first: a row's verdict is its worst resource's
# The verdicts as the page says them (the API and the CSV keep the codes).
VERDICT_TEXT = {
    UNDER: "too small: raise it",
    OVER: "larger than needed: lower it",
    OK: "about right: keep it",
    NO_QUOTA: "no quota: set one",
}


def advice_text(verdict_name: str, recommended: int) -> str:
    """The verdict with the one quota to apply, as the page says it: "too small: raise it to 5",
    "about right: keep 32" — never a second number that reads as a different advice."""
    return {
        UNDER: f"too small: raise it to {recommended}",
        OVER: f"larger than needed: lower it to {recommended}",
        OK: f"about right: keep {recommended}",
        NO_QUOTA: f"no quota: set one of {recommended}",
    }[verdict_name]


@dataclass(frozen=True)
class Params:
    window_days: int = 28
    margin: float = 0.15
    target_percentile: float = 0.90
    lower_percentile: float = 0.50
    upper_percentile: float = 0.95
    low_efficiency: float = 0.50      # over-provisioned only when efficiency is below this
    at_hard_share: float = 0.10       # under-provisioned when used == hard this share of the time
    min_queued_gpu_hours: float = 0.0  # under-provisioned when queued demand exceeds this


def with_margin(value: float, margin: float) -> float:
    return max(0.0, value * (1.0 + margin))


def confidence_upper(value: float, days: float) -> float:
    """VPA's upper-bound confidence multiplier: × (1 + 1/days)."""
    if days <= 0:
        return math.inf if value > 0 else 0.0
    return max(0.0, value * (1.0 + 1.0 / days))


def confidence_lower(value: float, days: float) -> float:
    """× max(0, 1 − 1/days): with a day of history or less, no floor at all."""
    if days <= 0:
        return 0.0
    return max(0.0, value * max(0.0, 1.0 - 1.0 / days))


def ceil_whole(value: float) -> int:
    """Ceiling that ignores float noise: 20 × 1.15 is 22.999999999999996, and means 23."""
    return max(0, math.ceil(round(value, 9)))


@dataclass(frozen=True)
class Estimate:
    hours: int
    days: float
    p50: float
    p90: float
    p95: float
    target: int
    lower_bound: float
    upper_bound: float


def estimate(hourly: Sequence[float], params: Params = Params()) -> Estimate:
    days = len(hourly) / 24.0
    p50 = percentile(hourly, params.lower_percentile)
    p90 = percentile(hourly, params.target_percentile)
    p95 = percentile(hourly, params.upper_percentile)
    target = ceil_whole(with_margin(p90, params.margin))
    if target == 0 and any(v > 0 for v in hourly):
        target = 1          # used at all: a quota of 0 would forbid what ran
    # A quota is whole GPUs: the upper bound never sits below what is needed, or "needed 5"
    # would stand beside "bounds 4.44 – 4.76" and a quota of 5 be told to lower itself to 5
    # (docs/advice-and-alerts.md, "Bounds").
    return Estimate(
        hours=len(hourly), days=days, p50=p50, p90=p90, p95=p95,
        target=target,
        lower_bound=confidence_lower(with_margin(p50, params.margin), days),
        upper_bound=max(float(target), confidence_upper(with_margin(p95, params.margin), days)),
    )


@dataclass(frozen=True)
class ResourceHistory:
    """What the shell gathered for one quota resource of one namespace (or ClusterQueue)."""
    resource: str
    hourly: Sequence[float]
    hard: float | None = None
    used: float | None = None
    used_peak: float | None = None    # the most counted against the quota in any hour
    allocated_gpu_seconds: float = 0.0
    used_gpu_seconds: float = 0.0
    queued_gpu_hours: float = 0.0
    # queued while used + pending requests exceeded the hard limit; None: unknown, all of it
    quota_bound_queued_gpu_hours: float | None = None
    seconds_at_hard: float = 0.0
    quota_hours: int = 0              # hours with a known hard limit
    pending_workloads: float | None = None  # Kueue only


@dataclass
class Assessment:
    resource: str
    estimate: Estimate
    hard: float | None
    used: float | None
    efficiency: float | None
    at_hard_share: float | None
    queued_gpu_hours: float
    verdict: str
    reason: str
    recommended: int = 0
    used_peak: float | None = None
    hourly_rate: Decimal | None = None
    currency: str | None = None
    monthly_money_freed: Decimal | None = None
    extra: dict = field(default_factory=dict)

    @property
    def monthly_money_at_stake(self) -> Decimal | None:
        return None if self.monthly_money_freed is None else abs(self.monthly_money_freed)

    @property
    def verdict_text(self) -> str:
        return VERDICT_TEXT[self.verdict]

    @property
    def advice_text(self) -> str:
        return advice_text(self.verdict, self.recommended)


def at_hard_share(h: ResourceHistory) -> float | None:
    """The share of the hours with a hard limit during which used stood at it."""
    return share(h.seconds_at_hard, h.quota_hours * SECONDS_PER_HOUR)


def money_freed(hard: float, recommended: int, hourly_rate: Decimal, currency: str) -> Decimal:
    """(quota − recommended) × 730 h × rate, in the rate's currency, rounded half-up to its
    minor unit (0.01 USD, 1 JPY, 0.001 KWD): positive when the recommendation lowers the
    quota, negative when it raises it."""
    gap = Decimal(str(hard)) - Decimal(recommended)
    return (gap * HOURS_PER_MONTH * hourly_rate).quantize(minor_unit(currency), rounding=ROUND_HALF_UP)


def _num(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.2f}"


def verdict(h: ResourceHistory, est: Estimate, params: Params = Params()) -> tuple[str, str]:
    """The verdict and its reason in words."""
    eff = efficiency(h.used_gpu_seconds, h.allocated_gpu_seconds)
    at_hard = at_hard_share(h)
    if h.hard is None:
        why = f"no quota limits {h.resource}; a hard limit of {est.target} would cover P90 × 1.15"
        if h.queued_gpu_hours > params.min_queued_gpu_hours:
            why += f" ({_num(h.queued_gpu_hours)} GPU-hours queued: pending pods wait for capacity, not quota)"
        return NO_QUOTA, why
    under = []
    bound = h.queued_gpu_hours if h.quota_bound_queued_gpu_hours is None else h.quota_bound_queued_gpu_hours
    capacity_wait = h.queued_gpu_hours - bound
    if bound > params.min_queued_gpu_hours:
        under.append(f"pods waited {_num(bound)} GPU-hours in Pending with the quota full")
    if h.pending_workloads:
        under.append(f"{_num(h.pending_workloads)} workloads pending in Kueue")
    if at_hard is not None and at_hard >= params.at_hard_share:
        peak = f" (peak used {_num(h.used_peak)})" if h.used_peak is not None and h.used_peak > h.hard else ""
        under.append(f"used stood at the quota of {_num(h.hard)} or above it during {at_hard:.0%} "
                     f"of the time{peak}")
    if under:
        raise_to = recommended_quota(UNDER, h.hard, est.target, params)
        return UNDER, "; ".join(under) + f": raise it to {raise_to}"
    eff_text = "nothing was allocated" if eff is None else f"efficiency is {eff:.0%}"
    note = ""
    if capacity_wait > params.min_queued_gpu_hours:
        note = (f" ({_num(capacity_wait)} GPU-hours queued with quota to spare: "
                "pending pods wait for capacity, not quota)")
    if h.hard > est.upper_bound:
        upper = (f"{est.upper_bound:.2f} (P95 × 1.15 over {est.days:.1f} days)" if est.upper_bound > est.target
                 else f"{est.target} (what is needed)")
        if eff is None or eff < params.low_efficiency:
            return OVER, (f"quota {_num(h.hard)} is above the upper bound {upper} and {eff_text}: "
                          f"lower it to {est.target}" + note)
        return OK, (f"quota {_num(h.hard)} is above the upper bound {upper} but {eff_text}, "
                    f"at least {params.low_efficiency:.0%}: the GPUs it holds are well used, keep {_num(h.hard)}"
                    + note)
    return OK, (f"quota {_num(h.hard)} lies within what {est.days:.1f} days of history support "
                f"(bounds {est.lower_bound:.2f}–{est.upper_bound:.2f}): keep {_num(h.hard)}" + note)


def recommended_quota(verdict_name: str, hard: float | None, target: int, params: Params = Params()) -> int:
    if hard is None or verdict_name in (OVER, NO_QUOTA):
        return target
    if verdict_name == UNDER:  # at least one more than now, even from a quota of 0
        return max(target, ceil_whole(with_margin(hard, params.margin)), ceil_whole(hard) + 1)
    return ceil_whole(hard)


def assess(h: ResourceHistory, params: Params = Params(),
           rate: tuple[Decimal, str] | None = None) -> Assessment:
    """Estimate, verdict and money for one resource. `rate` is (hourly rate, currency) or None."""
    est = estimate(h.hourly, params)
    name, reason = verdict(h, est, params)
    out = Assessment(
        resource=h.resource, estimate=est, hard=h.hard, used=h.used,
        efficiency=efficiency(h.used_gpu_seconds, h.allocated_gpu_seconds),
        at_hard_share=at_hard_share(h),
        queued_gpu_hours=h.queued_gpu_hours, verdict=name, reason=reason,
        recommended=recommended_quota(name, h.hard, est.target, params), used_peak=h.used_peak,
    )
    if rate is not None:
        out.hourly_rate, out.currency = rate
        if h.hard is not None:
            out.monthly_money_freed = money_freed(h.hard, out.recommended, *rate)
    return out


def worst_verdict(verdicts: Sequence[str]) -> str:
    for v in VERDICTS:
        if v in verdicts:
            return v
    return NO_QUOTA


def total_money(assessments: Sequence[Assessment], figure: str = "monthly_money_at_stake"
                ) -> tuple[Decimal | None, str | None]:
    """Sum of `figure` (money at stake, or money freed) over resources with a quota; None
    ("unpriced") if any of them has no rate or the currencies differ."""
    quoted = [a for a in assessments if a.hard is not None]
    if not quoted or any(getattr(a, figure) is None for a in quoted):
        return None, None
    currencies = {a.currency for a in quoted}
    if len(currencies) != 1:
        return None, None
    return sum((getattr(a, figure) for a in quoted), Decimal(0)), currencies.pop()


def split_by_weight(total: int, weights: Sequence[float]) -> list[int]:
    """Share a whole number over flavors in proportion to their current quotas (largest
    remainder); equal shares when every weight is 0."""
    if not weights:
        return []
    if sum(weights) <= 0:
        weights = [1.0] * len(weights)
    raw = [total * w / sum(weights) for w in weights]
    out = [math.floor(round(r, 9)) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: (-(raw[i] - out[i]), i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out
