"""GPUs split between pods: the GPU-seconds of the hours in which a whole GPU (no MIG profile) was
held in parts, by HAMi shares or by two or more pods (time-slicing, a DRA claim shared by pods),
per (cluster, namespace, GPU model, price class, billing-zone day), the unallocated remainder of
those hours under namespace "" (docs/chargeback.md, "Split costs in FOCUS 1.3").

These are the origin charges of the FOCUS 1.3 export's shared-GPU split: each group of a cluster's
split GPUs of one model and price class on one day is split over the namespaces that held parts
of it and its remainder, by GPU-seconds.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

from django.db.models import Count, Exists, Min, OuterRef, Q, Sum
from django.db.models.functions import TruncDate

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


def split_hours(start: datetime, end: datetime):
    """(device, hour) of [start, end) whose whole GPU was held in parts: a pod's row holds less
    than the GPU (a HAMi share), or two or more pods have rows in that hour."""
    return (UsageHour.objects.filter(hour_start__gte=start, hour_start__lt=end, mig_profile="")
            .exclude(namespace="")
            .values("device_id", "hour_start")
            .annotate(pods=Count("id"), least=Min("gpu_fraction"))
            .filter(Q(pods__gte=2) | Q(least__lt=WHOLE)))


def shared_gpu_days(start: datetime, end: datetime) -> SharedGpuDays:
    """The split hours' GPU-seconds of [start, end), grouped as the statement's cells are
    (cluster, namespace, GPU model, the node's price class, billing-zone day)."""
    split = split_hours(start, end).filter(device_id=OuterRef("device_id"), hour_start=OuterRef("hour_start"))
    rows = (UsageHour.objects.filter(hour_start__gte=start, hour_start__lt=end, mig_profile="")
            .filter(Exists(split))
            .annotate(price_class=price_class_expr(set(cluster_name_by_id())),
                      day=TruncDate("hour_start", tzinfo=billing_zone()))
            .values("cluster_id", "namespace", "gpu_model", "price_class", "day")
            .annotate(seconds=Sum("gpu_seconds")).order_by())
    names = cluster_name_by_id()
    found = SharedGpuDays()
    origins: dict[tuple, float] = defaultdict(float)
    for r in rows:
        cluster = names.get(r["cluster_id"], str(r["cluster_id"]))
        found.parts[(cluster, r["namespace"], r["gpu_model"], r["price_class"], r["day"])] = r["seconds"]
        origins[(cluster, r["gpu_model"], r["price_class"], r["day"])] += r["seconds"]
    found.origins = dict(origins)
    return found


def shared_ratio(part: float, whole: float) -> Decimal:
    """A part's share of its origin, exact enough to be rounded to 6 places by the export."""
    return Decimal(repr(part)) / Decimal(repr(whole)) if whole > 0 else Decimal(0)
