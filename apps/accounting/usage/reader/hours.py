"""Hourly and daily reads for pages and alerts: cells per hour, unallocated capacity, idle hours
since an instant, energy and quota per team and day.
A part of the rollups' one reader (its package docstring says the rule)."""
from __future__ import annotations

from datetime import datetime

from django.db.models import Max, Q, Sum
from django.db.models.functions import TruncDate

from apps.accounting.calendar.zone import billing_zone
from apps.accounting.models.rollups import QuotaHour, UsageHour
from apps.accounting.usage.cells import UsageFilter
from apps.accounting.usage.price_classes import price_class_expr
from apps.clusters.models import Cluster

from .pods import _CELL_SUMS
from .teams import HourTeams, _window, attributed


def unallocated_rows(f: UsageFilter, cluster_ids: set[int]):
    """Capacity and the part no pod held, per cluster, GPU model, MIG profile, price class and day."""
    return (_window(UsageHour, UsageFilter(start=f.start, end=f.end, cluster=f.cluster))
            .annotate(price_class=price_class_expr(cluster_ids), day=TruncDate("hour_start", tzinfo=billing_zone()))
            .values("cluster_id", "gpu_model", "mig_profile", "price_class", "day")
            .annotate(cap_s=Sum("gpu_seconds"), free_s=Sum("gpu_seconds", filter=Q(namespace="")),
                      free_mig_s=Sum("mig_seconds", filter=Q(namespace=""))).order_by())


# ---- hour grain: the explorer's hourly rows, the idle alerts ---------------------------------

def hour_cells(f: UsageFilter, rule: HourTeams) -> list[dict]:
    """Allocated usage per (cluster, namespace, team, GPU model, MIG profile, price class, hour)."""
    ids = set((Cluster.objects.filter(name=f.cluster) if f.cluster else Cluster.objects.all())
              .values_list("id", flat=True))
    qs = _window(UsageHour, f, rule).exclude(namespace="").annotate(price_class=price_class_expr(ids))
    return attributed(qs, ("cluster_id", "namespace", "gpu_model", "mig_profile", "price_class", "hour_start"),
                      _CELL_SUMS, f, rule)


def idle_hours_since(since: datetime, rule: HourTeams):
    """Every allocated hour since `since` with an idle stretch, as (cluster id, device id,
    namespace, pod, team, hour, idle prefix, idle suffix, longest idle run, whole hour idle,
    fraction, GPU model), ordered by device-pod, team and hour."""
    rows = (UsageHour.objects.filter(hour_start__gte=since).exclude(namespace="")
            .filter(Q(idle_prefix_seconds__gt=0) | Q(idle_suffix_seconds__gt=0) | Q(idle_max_run_seconds__gt=0))
            .order_by("cluster_id", "device_id", "namespace", "pod", "hour_start")
            .values_list("cluster_id", "device_id", "namespace", "pod", "hour_start", "idle_prefix_seconds",
                         "idle_suffix_seconds", "idle_max_run_seconds", "idle_whole_hour", "gpu_fraction",
                         "gpu_model"))
    out = [(c, d, ns, pod, rule.team(c, ns, hour), hour, *rest) for c, d, ns, pod, hour, *rest in rows]
    out.sort(key=lambda r: r[:6])
    return out


def has_usage(start: datetime, end: datetime) -> bool:
    return UsageHour.objects.filter(hour_start__gte=start, hour_start__lt=end).exists()


# ---- day grain: energy, quota use ------------------------------------------------------------

def energy_by_team_day(f: UsageFilter, rule: HourTeams) -> list[dict]:
    """Joules per (cluster, namespace, team, billing day); namespace '' is capacity no pod held
    (kept even for a team scope: the caller decides)."""
    qs = (_window(UsageHour, UsageFilter(start=f.start, end=f.end, cluster=f.cluster)).filter(energy_joules__isnull=False)
          .annotate(day=TruncDate("hour_start", tzinfo=billing_zone())))
    unscoped = UsageFilter(start=f.start, end=f.end, cluster=f.cluster)
    return attributed(qs, ("cluster_id", "namespace", "day"), {"e": Sum("energy_joules")}, unscoped, rule)


def quota_days(f: UsageFilter, resource: str, rule: HourTeams) -> list[dict]:
    """A quota resource per (cluster, namespace, team, billing day): the largest hard limit, the
    largest used and the seconds at the limit."""
    qs = (_window(QuotaHour, f, rule).filter(resource=resource)
          .annotate(day=TruncDate("hour_start", tzinfo=billing_zone())))
    return attributed(qs, ("cluster_id", "namespace", "day"),
                      dict(hard=Max("hard"), used=Max("used_max"), at_hard=Sum("seconds_at_hard")), f, rule)


# ---- device health ---------------------------------------------------------------------------
