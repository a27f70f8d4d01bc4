"""GPUs split between pods, and GPUs held through DRA claims (`claim_parts`).

Split: the GPU-seconds of the hours in which a whole GPU (no MIG profile) was held in parts, by
HAMi shares or by two or more pods (time-slicing, a DRA claim shared by pods), per (cluster,
namespace, GPU model, price class, billing-zone day), the unallocated remainder of those hours
under namespace "" (docs/chargeback.md, "Split costs in FOCUS 1.3").

These are the origin charges of the FOCUS 1.3 export's shared-GPU split: each group of a cluster's
split GPUs of one model and price class on one day is split over the namespaces that held parts
of it and its remainder, by GPU-seconds.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

from django.db.models import Count, ExpressionWrapper, F, FloatField, Max, Min, Q, Sum
from django.db.models.functions import Coalesce, TruncDate

from apps.accounting.calendar.zone import billing_zone
from apps.accounting.models import UsageHour
from apps.accounting.usage.cells import cluster_name_by_id
from apps.accounting.usage.price_classes import price_class_expr

WHOLE = 1.0 - 1e-9          # a pod's row below this fraction of its GPU holds a HAMi share of it


@dataclass
class SharedGpuDays:
    """`parts[(cluster, namespace, gpu_model, price_class, day)]`: GPU-seconds held in split hours
    (namespace "" the remainder no pod held); `origins[(cluster, gpu_model, price_class, day)]`:
    the whole of those hours, the parts' sum."""
    parts: dict[tuple, float] = field(default_factory=dict)
    origins: dict[tuple, float] = field(default_factory=dict)

    def part(self, cluster: str, namespace: str, gpu_model: str, price_class: str, day: date | None) -> float:
        return self.parts.get((cluster, namespace, gpu_model, price_class, day), 0.0)

    def origin(self, cluster: str, gpu_model: str, price_class: str, day: date | None) -> float:
        return self.origins.get((cluster, gpu_model, price_class, day), 0.0)

    def allocated(self, cluster: str, gpu_model: str, price_class: str, day: date | None) -> float:
        """The origin less its remainder: what the pods held of it."""
        return (self.origin(cluster, gpu_model, price_class, day)
                - self.part(cluster, "", gpu_model, price_class, day))


def split_hours(hours):
    """The (device, hour) groups of `hours` (UsageHour rows of whole GPUs) whose GPU was held in
    parts: a pod's row holds less than the GPU (a HAMi share), or two or more pods held it at once
    (time-slicing, a shared DRA claim). At once: their samples, each counting the cluster's scrape
    interval, cover more time than the hour's rows hold GPU-seconds (pods that follow each other on
    a GPU within an hour cover only the time they held it). A cluster whose interval is not known
    yet counts two pods in an hour as holding it at once."""
    held = ~Q(namespace="")
    return (hours.values("device_id", "hour_start")
            .annotate(pods=Count("id", filter=held), least=Min("gpu_fraction", filter=held),
                      samples=Sum("sample_count", filter=held), seconds=Sum("gpu_seconds"),
                      step=Max(Coalesce("cluster__pinned_interval_seconds", "cluster__detected_interval_seconds")))
            .annotate(covered=ExpressionWrapper(F("samples") * F("step"), output_field=FloatField()))
            .filter(Q(least__lt=WHOLE) | Q(pods__gte=2) & (
                Q(step__isnull=True) | Q(covered__gt=F("seconds") + F("step") * 1.5)))
            .values_list("device_id", "hour_start").order_by())


def split_rows(start: datetime, end: datetime, *, namespaces: frozenset[str] | None = None,
               cluster: str | None = None) -> list[tuple]:
    """The UsageHour rows of [start, end)'s split hours (`split_hours`), of the hours `namespaces`
    held a part in (None: every split hour), as (device, hour, cluster id, namespace, GPU model,
    price class, billing-zone day, GPU fraction, GPU-seconds, used GPU-seconds). Two reads: the
    split hours (one grouped pass over the window's rows of whole GPUs), then the rows of their
    devices, none when no GPU was split."""
    base = UsageHour.objects.filter(hour_start__gte=start, hour_start__lt=end, mig_profile="")
    if cluster:
        base = base.filter(cluster__name=cluster)
    groups = base
    theirs = None
    if namespaces is not None:
        theirs = set(base.filter(namespace__in=namespaces).values_list("device_id", "hour_start"))
        if not theirs:
            return []
        groups = base.filter(device_id__in={d for d, _ in theirs})
    keys = set(split_hours(groups))
    if theirs is not None:
        keys &= theirs
    if not keys:
        return []
    names = cluster_name_by_id()
    rows = (base.filter(device_id__in={d for d, _ in keys})
            .annotate(price_class=price_class_expr(set(names)), day=TruncDate("hour_start", tzinfo=billing_zone()))
            .values_list("device_id", "hour_start", "cluster_id", "namespace", "gpu_model", "price_class", "day",
                         "gpu_fraction", "gpu_seconds", "used_gpu_seconds")
            .order_by("device_id", "hour_start", "namespace"))
    return [r for r in rows if (r[0], r[1]) in keys]


def shared_gpu_days(start: datetime, end: datetime) -> SharedGpuDays:
    """The split hours' GPU-seconds of [start, end), grouped as the statement's cells are
    (cluster, namespace, GPU model, the node's price class, billing-zone day)."""
    names = cluster_name_by_id()
    parts: dict[tuple, float] = defaultdict(float)
    origins: dict[tuple, float] = defaultdict(float)
    for _d, _h, cluster_id, ns, model, price_class, day, _f, seconds, _used in split_rows(start, end):
        cluster = names.get(cluster_id, str(cluster_id))
        parts[(cluster, ns, model, price_class, day)] += seconds
        origins[(cluster, model, price_class, day)] += seconds
    return SharedGpuDays(dict(parts), dict(origins))


def shared_ratio(part: float, whole: float) -> Decimal:
    """A part's share of its origin, exact enough to be rounded to 6 places by the export."""
    return Decimal(repr(part)) / Decimal(repr(whole)) if whole > 0 else Decimal(0)


HAMI = "HAMi share"
SHARED = "shared by pods"      # time-slicing, or a DRA claim shared by pods


@dataclass
class SharedPart:
    """A namespace's parts of split GPUs of one model and price class over a window: what it held
    (`gpu_seconds`), used, and its part of those hours' unallocated remainder (each hour's
    remainder split over the pods holding parts of it in proportion to their seconds)."""
    cluster: str
    namespace: str
    gpu_model: str
    price_class: str
    kind: str                       # HAMI when a row of it held less than the GPU, else SHARED
    gpu_seconds: float = 0.0
    used_gpu_seconds: float = 0.0
    remainder_seconds: float = 0.0
    days: dict = field(default_factory=dict)        # day -> [held, remainder] seconds, for pricing


def shared_parts(start: datetime, end: datetime, *, namespaces: frozenset[str] | None = None,
                 cluster: str | None = None) -> list[SharedPart]:
    """The parts of split GPUs (`split_hours`) that `namespaces` (None: every namespace) held in
    [start, end), per (cluster, namespace, GPU model, price class): the team page's "GPUs held in
    parts", from the same split hours as the FOCUS 1.3 export's shared-GPU rows."""
    names = cluster_name_by_id()
    rows = split_rows(start, end, namespaces=namespaces, cluster=cluster)
    hours: dict[tuple, list] = defaultdict(list)
    for r in rows:
        hours[(r[0], r[1])].append(r)
    parts: dict[tuple, SharedPart] = {}
    for held in hours.values():
        remainder = sum(r[8] for r in held if not r[3])
        pods = [r for r in held if r[3]]
        total = sum(r[8] for r in pods)
        for _d, _h, cluster_id, ns, model, price_class, day, fraction, seconds, used in pods:
            if namespaces is not None and ns not in namespaces:
                continue
            key = (names.get(cluster_id, str(cluster_id)), ns, model, price_class)
            part = parts.get(key)
            if part is None:
                part = parts[key] = SharedPart(*key, kind=SHARED)
            if fraction < WHOLE:
                part.kind = HAMI
            mine = remainder * seconds / total if total else 0.0
            part.gpu_seconds += seconds
            part.used_gpu_seconds += used
            part.remainder_seconds += mine
            on_day = part.days.setdefault(day, [0.0, 0.0])
            on_day[0] += seconds
            on_day[1] += mine
    return sorted(parts.values(), key=lambda p: (p.cluster, p.namespace, p.gpu_model, p.price_class))


@dataclass
class ClaimPart:
    """A namespace's GPUs (or MIG devices) held through DRA ResourceClaims over a window, per
    cluster, GPU model, MIG profile and price class; `days`: day -> [GPU-seconds, MIG instance
    seconds], for pricing at the rate in force each day."""
    cluster: str
    namespace: str
    gpu_model: str
    mig_profile: str
    price_class: str
    gpu_seconds: float = 0.0
    used_gpu_seconds: float = 0.0
    days: dict = field(default_factory=dict)


def claim_parts(start: datetime, end: datetime, *, namespaces: frozenset[str],
                cluster: str | None = None) -> list[ClaimPart]:
    """What `namespaces` held through DRA claims in [start, end) (`UsageHour.dra_claim`, set at
    ingest from dcgm-exporter's dra_* labels: docs/accounting.md, "DRA-allocated GPUs")."""
    rows = UsageHour.objects.filter(hour_start__gte=start, hour_start__lt=end, dra_claim=True,
                                    namespace__in=namespaces)
    if cluster:
        rows = rows.filter(cluster__name=cluster)
    names = cluster_name_by_id()
    rows = (rows.annotate(price_class=price_class_expr(set(names)), day=TruncDate("hour_start", tzinfo=billing_zone()))
            .values("cluster_id", "namespace", "gpu_model", "mig_profile", "price_class", "day")
            .annotate(g=Sum("gpu_seconds"), u=Sum("used_gpu_seconds"), m=Sum("mig_seconds")).order_by())
    parts: dict[tuple, ClaimPart] = {}
    for r in rows:
        key = (names.get(r["cluster_id"], str(r["cluster_id"])), r["namespace"], r["gpu_model"], r["mig_profile"],
               r["price_class"])
        part = parts.get(key)
        if part is None:
            part = parts[key] = ClaimPart(*key)
        part.gpu_seconds += r["g"]
        part.used_gpu_seconds += r["u"]
        on_day = part.days.setdefault(r["day"], [0.0, 0.0])
        on_day[0] += r["g"]
        on_day[1] += r["m"]
    return sorted(parts.values(), key=lambda p: (p.cluster, p.namespace, p.gpu_model, p.mig_profile, p.price_class))
