"""Fleet health reads: device readings per hour, XID errors, and the hours a team's pods held a GPU
(docs/pages.md, its Fleet health row).
A part of the rollups' one reader (its package docstring says the rule)."""
from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Avg, Exists, Max, OuterRef, Q, Subquery, Sum

from apps.accounting.models.rollups import DeviceHealthHour, UsageHour
from apps.accounting.usage.cells import UsageFilter

from .teams import HourTeams, _window


def health_rows(f: UsageFilter):
    """The health readings of the window (every device of the scope's clusters)."""
    return _window(DeviceHealthHour, UsageFilter(start=f.start, end=f.end, cluster=f.cluster))


def fleet_health_by_device(f: UsageFilter):
    return (health_rows(f).values("device_id", "cluster__name", "device__host", "device__gpu_index",
                                  "device__mig_instance_id", "device__model_name", "device__uuid")
            .annotate(t_max=Max("temperature_c_max"), t_avg=Avg("temperature_c_avg"),
                      hot_max=Max("seconds_above_83c"), hot_sum=Sum("seconds_above_83c"),
                      p_avg=Avg("power_watts_avg"), e_sum=Sum("energy_joules"), xid_n=Sum("xid_samples"))
            .order_by("cluster__name", "device__host", "device__gpu_index", "device__mig_instance_id"))


def fleet_xids(f: UsageFilter):
    return (health_rows(f).filter(xid_samples__gt=0).order_by("hour_start")
            .values_list("device_id", "xid_codes", "hour_start"))


def fleet_health_by_hour(f: UsageFilter):
    return (health_rows(f).values("hour_start")
            .annotate(t_max=Max("temperature_c_max"), t_avg=Avg("temperature_c_avg"), p=Sum("power_watts_avg"))
            .order_by("hour_start"))


HELD_NOTHING = Q(pk__in=[])


def held_hours(f: UsageFilter, rule: HourTeams) -> Q:
    """A filter on the hours the scope's teams' namespaces held GPUs (`f.teams` must be set).

    One query of (cluster, namespace, hour), whatever the number of devices. A namespace that
    was theirs in every hour it held a GPU is matched by name alone (`namespace IN (…)`, per
    cluster); only one that changed hands in the window is matched by its runs of hours — a
    filter of one range per run and namespace took minutes on SQLite for a lead's month
    (docs/performance.md)."""
    hour_len = timedelta(hours=1)
    qs = _window(UsageHour, f, rule).exclude(namespace="")
    runs: dict[tuple[int, str], list[list[datetime]]] = {}
    changed_hands: set[tuple[int, str]] = set()
    for cluster_id, ns, hour in (qs.values_list("cluster_id", "namespace", "hour_start").distinct()
                                 .order_by("cluster_id", "namespace", "hour_start")):
        if rule.team(cluster_id, ns, hour) not in f.teams:
            changed_hands.add((cluster_id, ns))
            continue
        spans = runs.setdefault((cluster_id, ns), [])
        if spans and spans[-1][1] == hour:
            spans[-1][1] = hour + hour_len
        else:
            spans.append([hour, hour + hour_len])
    held = HELD_NOTHING
    whole: dict[int, list[str]] = {}
    for (cluster_id, ns), spans in sorted(runs.items()):
        if (cluster_id, ns) not in changed_hands:
            whole.setdefault(cluster_id, []).append(ns)
            continue
        for a, b in spans:
            held |= Q(cluster_id=cluster_id, namespace=ns, hour_start__gte=a, hour_start__lt=b)
    for cluster_id, whole_names in whole.items():
        held |= Q(cluster_id=cluster_id, namespace__in=whole_names)
    return held


HELD_READINGS = ("device_id", "hour_start", "temperature_c_max", "temperature_c_avg", "seconds_above_83c",
                 "power_watts_avg", "energy_joules", "xid_samples", "xid_codes")


def held_readings(f: UsageFilter, held: Q) -> list[tuple]:
    """The health readings of the device-hours matched by `held` (`held_hours`; a GPU shared by
    time-slicing counts when any of its pods that hour matches), as `HELD_READINGS` tuples.

    Read from the held side: the held (cluster, device, hour) from UsageHour by namespace (its
    index), each reading looked up by DeviceHealthHour's unique (cluster, device, hour) — not a
    subquery per reading, which scanned every hour of the device on SQLite (docs/performance.md)."""
    qs = _window(UsageHour, UsageFilter(start=f.start, end=f.end, cluster=f.cluster)).filter(held)
    reading = DeviceHealthHour.objects.filter(cluster_id=OuterRef("cluster_id"), device_id=OuterRef("device_id"),
                                              hour_start=OuterRef("hour_start"))
    fields = HELD_READINGS[2:]
    rows = (qs.values("cluster_id", "device_id", "hour_start").distinct().order_by()
            .annotate(has=Exists(reading), **{f"r_{x}": Subquery(reading.values(x)[:1]) for x in fields}))
    return [(r["device_id"], r["hour_start"], *(r[f"r_{x}"] for x in fields)) for r in rows if r["has"]]


# ---- namespace grain: the quota advice's histories -------------------------------------------
