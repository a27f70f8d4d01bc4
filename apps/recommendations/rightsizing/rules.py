"""Right-sizing a workload's GPU: a MIG slice, a time-sliced share, or nothing at all
(docs/advice-and-alerts.md, "Right-sizing"), in plain Python. No Django here.

Per workload and the GPU it holds, from its hourly rollups over the window:

1. **Never used** — no GPU activity at all (used GPU-seconds = 0), or every second it held a
   GPU idle, below the cluster's idle threshold (idle = allocated GPU-seconds,
   docs/accounting.md): *release it*; the saving is everything it costs.
2. **Multi-GPU pods** (more than 1.5 devices per pod-hour on average) stay as they are: a
   process sees one MIG instance, and time-slicing shares one GPU.
3. **MIG** (a model in `mig_profiles.MIG_MODELS`): the profile with the fewest compute slices,
   then the least memory, such that
   - memory: framebuffer peak × (1 + headroom) ≤ the profile's memory, and
   - compute: P95 of the hourly activity × the share of the GPU it holds now × (1 + headroom)
     ≤ the profile's slices ÷ the model's slices;
   recommended only if it has fewer slices than what the workload holds now (a whole GPU
   has them all). The peak is the largest hourly peak of `DCGM_FI_DEV_FB_USED` over the
   window: a profile the workload ever outgrew is never recommended.
4. **Time-sliced share** (a model without MIG, e.g. L4, L40S): when P95 activity × (1 +
   headroom) ≤ 1 ÷ replicas and peak × (1 + headroom) ≤ board memory ÷ replicas.
5. **A HAMi share** (with `Params.hami`, the clusters run HAMi; or a workload already on one):
   cores = ⌈P95 activity × the share held now × (1 + headroom) × 100⌉ %, memory = ⌈peak × (1 +
   headroom)⌉ MiB, the share = max(cores ÷ 100, memory ÷ the board's), the rule ingest charges
   by (docs/accounting.md, "HAMi fractional GPUs"); offered beside a MIG profile (the advice is
   the smaller of the two, the MIG slice on a tie), advised when smaller than what it holds.
6. Otherwise **keep** it.

**Money** per month, at the rate card, measured over the stated window and never extrapolated
(docs/advice-and-alerts.md, "What a saving is"): (rate now − rate advised) × instance-hours
held × 730 h ÷ the window's hours when the window is longer than 730 h, else the window's own
saving — never more than the workload cost in the window — rounded half-up to the currency's
minor unit. Rate now: the model's rate per GPU-hour for a whole GPU; the profile's own rate,
else the model's rate × the profile's fraction, for a MIG slice. Rate advised: likewise for
the new profile; the model's rate ÷ replicas for a share; the model's rate × the HAMi share ÷
the share held now for a HAMi share (a HAMi workload's GPU-hours are already its share of the
GPU); 0 for release.

**Confidence** is the number of hours the workload was observed: under 24 low, under 168
(a week) medium, else high.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal

from apps.accounting.core.currencies import minor_unit

from apps.recommendations.estimator import HOURS_PER_MONTH
from apps.recommendations.mig_profiles import MIB_PER_GB, MigModel, board_memory_gb, mig_model, profile_named

RELEASE = "release"
MIG = "mig"
SHARE = "share"
HAMI = "hami"
KEEP = "keep"
ACTIONS = (RELEASE, MIG, SHARE, HAMI, KEEP)
ACTION_TEXT = {
    RELEASE: "release it: never used",
    MIG: "move to a MIG slice",
    SHARE: "share a GPU (time-slicing)",
    HAMI: "move to a HAMi share",
    KEEP: "keep it",
}
LOW, MEDIUM, HIGH = "low", "medium", "high"
MULTI_GPU_PODS = 1.5
WHOLE_GPU = "nvidia.com/gpu"
SHARED_GPU = "nvidia.com/gpu.shared"
HAMI_RESOURCES = "nvidia.com/gpu, nvidia.com/gpucores, nvidia.com/gpumem"


@dataclass(frozen=True)
class Params:
    headroom: float = 0.15            # the quota advice's margin, docs/advice-and-alerts.md
    share_replicas: int = 4           # replicas per GPU in the cluster's time-slicing config
    hami: bool = False                # the clusters run HAMi: HAMi shares may be advised for whole GPUs
    low_hours: int = 24               # fewer hours observed: low confidence
    high_hours: int = 168             # at least this many: high


@dataclass(frozen=True)
class Observed:
    """What the rollups say of one workload on one kind of GPU over the window."""
    gpu_model: str
    mig_profile: str = ""             # "" for a whole GPU (or a time-sliced share of one)
    gpu_fraction: float = 1.0         # the share of the GPU one device of it is
    hours: int = 0                    # distinct hours observed
    devices_per_pod: float = 1.0
    used_gpu_seconds: float = 0.0
    gpu_seconds: float = 0.0          # allocated
    idle_gpu_seconds: float = 0.0     # allocated and below the idle threshold
    activity_p95: float | None = None
    fb_peak_mib: float | None = None
    fb_p95_mib: float | None = None


@dataclass(frozen=True)
class Advice:
    action: str
    profile: str | None               # the MIG profile advised
    resource_now: str                 # the extended resource the pods ask for now
    resource_advised: str | None      # … and should ask for instead (None: release or keep)
    fraction_advised: float | None    # the share of a GPU advised (for pricing)
    reason: str
    confidence: str
    hami: "HamiShare | None" = None   # the HAMi share that would fit, advised or offered beside

    @property
    def text(self) -> str:
        if self.action == HAMI:
            return f"use a HAMi share: {self.hami.request}"
        return f"use {self.profile}" if self.action == MIG else ACTION_TEXT[self.action]


@dataclass(frozen=True)
class HamiShare:
    cores: int                        # nvidia.com/gpucores: percent of the GPU's compute
    memory_mib: int                   # nvidia.com/gpumem
    share: float                      # max(cores ÷ 100, memory ÷ the board's): what it is charged

    @property
    def request(self) -> str:
        return f"gpucores {self.cores}, gpumem {self.memory_mib} MiB ({self.share:.0%} of the GPU)"


def hami_share(o: "Observed", activity: float, need_mib: float, headroom: float) -> HamiShare | None:
    """The HAMi share that holds the workload's P95 compute (its activity is relative to the share
    it holds now) and its memory peak, with headroom; None for a model whose memory is unknown."""
    memory_gb = board_memory_gb(o.gpu_model)
    if memory_gb is None:
        return None
    board_mib = memory_gb * MIB_PER_GB
    held = o.gpu_fraction if not o.mig_profile else 1.0
    cores = max(1, math.ceil(activity * held * (1 + headroom) * 100 - 1e-9))
    memory = math.ceil(need_mib - 1e-9)
    if cores > 100 or memory > board_mib:
        return None
    return HamiShare(cores, memory, max(cores / 100, memory / board_mib))


def on_hami(o: "Observed") -> bool:
    """A share of a whole GPU without a MIG profile: what HAMi's rows are (docs/accounting.md)."""
    return not o.mig_profile and o.gpu_fraction < 1.0 - 1e-9


def resource_for(mig_profile: str) -> str:
    return f"nvidia.com/mig-{mig_profile}" if mig_profile else WHOLE_GPU


def confidence(hours: int, params: Params = Params()) -> str:
    return LOW if hours < params.low_hours else MEDIUM if hours < params.high_hours else HIGH


def gib(mib: float | None) -> str:
    return "no reading" if mib is None else f"{mib / 1024:.1f} GiB"


def _held_slices(model: MigModel, o: Observed) -> int:
    if not o.mig_profile:
        return model.max_slices
    p = profile_named(model, o.mig_profile)
    return p.slices if p else round(o.gpu_fraction * model.max_slices)


def smallest_profile(model: MigModel, need_mib: float, need_compute: float):
    """The profile with the fewest slices, then the least memory, that holds `need_mib` of
    framebuffer and `need_compute` of the GPU's compute; None if only the whole GPU does."""
    fits = [p for p in model.profiles
            if p.memory_mib(model) >= need_mib and p.slices / model.max_slices >= need_compute - 1e-12]
    return min(fits, key=lambda p: (p.slices, p.memory_units), default=None)


def advise(o: Observed, params: Params = Params()) -> Advice:
    now = resource_for(o.mig_profile)
    sure = confidence(o.hours, params)
    h = 1.0 + params.headroom

    def keep(reason):
        return Advice(KEEP, None, now, None, None, reason, sure)

    hours = f"{o.hours} hour{'' if o.hours == 1 else 's'}"
    if o.used_gpu_seconds <= 0:
        return Advice(RELEASE, None, now, None, 0.0, f"no GPU activity in the {hours} it held a GPU: release it", sure)
    if o.gpu_seconds > 0 and o.idle_gpu_seconds >= o.gpu_seconds * (1 - 1e-9):
        return Advice(RELEASE, None, now, None, 0.0,
                      f"idle (under the cluster's idle threshold) every second of the {hours} it held a GPU: "
                      "release it", sure)
    if o.devices_per_pod >= MULTI_GPU_PODS:
        return keep(f"each pod holds {o.devices_per_pod:.1f} GPUs on average: a process sees one MIG instance, "
                    "so multi-GPU pods stay on whole GPUs")
    if o.fb_peak_mib is None:
        return keep("no framebuffer readings (DCGM_FI_DEV_FB_USED): memory cannot be sized")
    activity = o.activity_p95 or 0.0
    need_mib = o.fb_peak_mib * h
    peak = f"framebuffer peak {gib(o.fb_peak_mib)} (+{params.headroom:.0%}: {gib(need_mib)})"
    act = f"P95 activity {activity:.0%}"
    hami = hami_share(o, activity, need_mib, params.headroom) if params.hami or on_hami(o) else None
    if on_hami(o):
        held = f"its share ({o.gpu_fraction:.0%} of the GPU)"
        if hami is None or hami.share >= o.gpu_fraction - 1e-9:
            return Advice(KEEP, None, HAMI_RESOURCES, None, None,
                          f"{peak} and {act} of {held}: already the smallest HAMi share that fits", sure, hami)
        return Advice(HAMI, None, HAMI_RESOURCES, HAMI_RESOURCES, hami.share,
                      f"{peak} and {act} of {held} fit {hami.request}", sure, hami)
    model = mig_model(o.gpu_model)
    if model is not None and hami is not None and not o.mig_profile:
        mig = advise(o, Params(headroom=params.headroom, share_replicas=params.share_replicas,
                               low_hours=params.low_hours, high_hours=params.high_hours))
        if mig.action == MIG and mig.fraction_advised <= hami.share + 1e-9:
            return replace(mig, reason=f"{mig.reason}; or a HAMi share: {hami.request}", hami=hami)
        if hami.share < 1.0 - 1e-9:
            offered = f"; {mig.profile} would hold {mig.fraction_advised:.0%}" if mig.action == MIG else ""
            return Advice(HAMI, None, now, HAMI_RESOURCES, hami.share,
                          f"{peak} and {act} fit {hami.request}{offered}", sure, hami)
        return mig
    if model is not None:
        held = _held_slices(model, o)
        need_compute = activity * (held / model.max_slices) * h
        best = smallest_profile(model, need_mib, need_compute)
        if o.mig_profile and (best is None or best.slices >= held):
            return keep(f"{peak} and {act}: already on the smallest {model.label} profile that fits "
                        f"({o.mig_profile})")
        if best is None:
            return keep(f"{peak} and {act} need the whole {model.label} GPU")
        return Advice(MIG, best.name, now, resource_for(best.name), best.slices / model.max_slices,
                      f"{peak} fits {best.name} ({gib(best.memory_mib(model))}); {act} of "
                      f"{'the GPU' if not o.mig_profile else o.mig_profile} fits {best.slices}/{model.max_slices} "
                      "of its compute", sure)
    memory_gb = board_memory_gb(o.gpu_model)
    if o.mig_profile or o.gpu_fraction < 1.0:
        return keep(f"{o.gpu_model} is not in the MIG table")
    if memory_gb is None:
        return keep(f"{o.gpu_model} has no MIG and its memory is not in the table: no share sized")
    if hami is not None and hami.share < 1.0 - 1e-9:
        return Advice(HAMI, None, now, HAMI_RESOURCES, hami.share, f"{peak} and {act} fit {hami.request}", sure, hami)
    n = params.share_replicas
    share_mib = memory_gb * MIB_PER_GB / n
    if activity * h <= 1.0 / n and need_mib <= share_mib:
        return Advice(SHARE, None, now, SHARED_GPU, 1.0 / n,
                      f"{o.gpu_model} has no MIG; {peak} fits 1/{n} of its {memory_gb:g} GB "
                      f"({gib(share_mib)}) and {act} fits 1/{n} of its time", sure)
    return keep(f"{o.gpu_model} has no MIG, and {peak} with {act} needs more than 1/{n} of it")


def monthly(amount_per_hour: Decimal, instance_hours: float, window_hours: float, currency: str) -> Decimal:
    """amount per instance-hour × instance-hours held in the window, scaled down to 730 hours
    when the window is longer (never up: a saving is never more than what the window shows),
    in the currency's minor unit (half-up)."""
    if window_hours <= 0:
        return Decimal(0).quantize(minor_unit(currency))
    held = Decimal(str(round(instance_hours, 6)))
    value = amount_per_hour * held * HOURS_PER_MONTH / max(Decimal(str(window_hours)), HOURS_PER_MONTH)
    return value.quantize(minor_unit(currency), rounding=ROUND_HALF_UP)


def monthly_saving(rate_now: Decimal, rate_advised: Decimal, instance_hours: float, window_hours: float,
                   currency: str) -> Decimal:
    return monthly(rate_now - rate_advised, instance_hours, window_hours, currency)
