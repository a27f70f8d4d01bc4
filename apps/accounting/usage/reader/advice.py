"""The advice's windows: first hours, namespace hours and totals, quota and queued-demand hours,
capacity per model (docs/advice-and-alerts.md).
A part of the rollups' one reader (its package docstring says the rule)."""
from __future__ import annotations

from datetime import datetime

from django.db.models import Min, Sum

from apps.accounting.models.rollups import QueuedDemandHour, QuotaHour, UsageHour


def first_hours(cluster_ids, end: datetime) -> dict[tuple[int, str], datetime]:
    """When each namespace first appears in the rollups (usage or quota), at any time before end."""
    first: dict[tuple[int, str], datetime] = {}
    usage = (UsageHour.objects.filter(cluster_id__in=cluster_ids, hour_start__lt=end).exclude(namespace="")
             .values("cluster_id", "namespace").annotate(first=Min("hour_start")).order_by())
    quota = (QuotaHour.objects.filter(cluster_id__in=cluster_ids, hour_start__lt=end)
             .values("cluster_id", "namespace").annotate(first=Min("hour_start")).order_by())
    for r in list(usage) + list(quota):
        key = (r["cluster_id"], r["namespace"])
        first[key] = min(first.get(key, r["first"]), r["first"])
    return first


def _advice_window(cluster_ids, start: datetime, end: datetime) -> dict:
    return {"cluster_id__in": cluster_ids, "hour_start__gte": start, "hour_start__lt": end}


def namespace_hours(cluster_ids, start: datetime, end: datetime):
    """Allocated GPU- and MIG-seconds per (cluster, namespace, MIG profile, hour)."""
    return (UsageHour.objects.filter(**_advice_window(cluster_ids, start, end)).exclude(namespace="")
            .values("cluster_id", "namespace", "mig_profile", "hour_start")
            .annotate(gpu_s=Sum("gpu_seconds"), mig_s=Sum("mig_seconds")).order_by())


def namespace_model_totals(cluster_ids, start: datetime, end: datetime):
    """Allocated and used GPU-seconds per (cluster, namespace, MIG profile, GPU model)."""
    return (UsageHour.objects.filter(**_advice_window(cluster_ids, start, end)).exclude(namespace="")
            .values("cluster_id", "namespace", "mig_profile", "gpu_model")
            .annotate(gpu_s=Sum("gpu_seconds"), used_s=Sum("used_gpu_seconds")).order_by())


def quota_hours(cluster_ids, start: datetime, end: datetime) -> list[tuple]:
    """Hours with a hard quota: (cluster id, namespace, resource, hour, hard, used max, seconds at hard)."""
    return list(QuotaHour.objects.filter(**_advice_window(cluster_ids, start, end), hard__isnull=False)
                .values_list("cluster_id", "namespace", "resource", "hour_start", "hard", "used_max",
                             "seconds_at_hard").order_by("hour_start"))


def queued_hours(cluster_ids, start: datetime, end: datetime):
    """Queued demand per (cluster, namespace, requested resource, hour)."""
    return (QueuedDemandHour.objects.filter(**_advice_window(cluster_ids, start, end))
            .values("cluster_id", "namespace", "resource", "hour_start")
            .annotate(q=Sum("queued_gpu_seconds"), requested=Sum("requested")).order_by())


def capacity_by_model(cluster_ids, start: datetime, end: datetime):
    """Capacity seconds per (cluster, MIG profile, GPU model), allocated or not."""
    return (UsageHour.objects.filter(**_advice_window(cluster_ids, start, end))
            .values("cluster_id", "mig_profile", "gpu_model")
            .annotate(s=Sum("gpu_seconds"), mig_s=Sum("mig_seconds")).order_by())
