"""The daily rollups (UsageDay, and the per-pod day summary UsagePodDay) kept equal to the
hourly one (days: `calendar/zone.py`).

An hour belongs to the billing day its start falls in (as `TruncDate(hour_start, zone)` does),
so a day is the hours with `day_start <= hour_start < next day_start`, both local midnights
expressed in UTC. `rebuild_days` recomputes whole days from UsageHour; callers run it inside
the transaction that rewrote the hours, so readers never see the two tables disagree.
"""
from __future__ import annotations

from datetime import date, timedelta

from django.db import connection
from django.db.models import Count, Sum

from apps.accounting.core.measures import IdleBlock, idle_block, join_idle_blocks
from apps.accounting.models import UsageDay, UsageDayBuilt, UsageHour, UsagePodDay, UsagePodDayBuilt
from apps.accounting.calendar.zone import billing_zone, day_start
from apps.accounting.usage.reader import Epoch, epoch_instant

BULK = 5000


zone = billing_zone   # one definition of the billing zone (docs/dates-and-money.md)


def rebuild_days(cluster_id: int, days: list[date]) -> int:
    """Recompute UsageDay for these days of one cluster from UsageHour; returns rows written."""
    tz = zone()
    written = 0
    for day in days:
        lo, hi = day_start(day, tz), day_start(day + timedelta(days=1), tz)
        UsageDay.objects.filter(cluster_id=cluster_id, day=day).delete()
        if connection.vendor == "postgresql":
            written += _insert_select(cluster_id, day, lo, hi)
        else:
            written += _insert_orm(cluster_id, day, lo, hi)
        UsageDayBuilt.objects.update_or_create(cluster_id=cluster_id, day=day, defaults={"zone": tz.key})
        rebuild_pod_day(cluster_id, day, lo, hi, tz.key)
    return written


# The per-pod day summary the idle list reads for whole days (docs/performance.md, "The longest
# reads"): one row per device-pod and day, its sums and its idle block (`core.measures`).
_POD_HOUR = ("namespace", "pod", "device_id", "gpu_model", "node", "_at", "gpu_fraction", "gpu_seconds",
             "used_gpu_seconds", "idle_gpu_seconds", "idle_prefix_seconds", "idle_suffix_seconds",
             "idle_max_run_seconds", "idle_whole_hour")


def rebuild_pod_day(cluster_id: int, day: date, lo, hi, zone_key: str) -> int:
    """Recompute UsagePodDay for one day of one cluster from its allocated hours; marks it built."""
    UsagePodDay.objects.filter(cluster_id=cluster_id, day=day).delete()
    hours = (UsageHour.objects.filter(cluster_id=cluster_id, hour_start__gte=lo, hour_start__lt=hi, gpu_seconds__gt=0)
             .exclude(namespace="").annotate(_at=Epoch("hour_start"))
             .order_by("namespace", "pod", "device_id", "gpu_model", "node", "hour_start").values_list(*_POD_HOUR))
    objs, key, row, block = [], None, None, None
    for ns, pod, device_id, model, node, hour, fraction, gpu_s, used_s, idle_s, *idle in hours.iterator(chunk_size=BULK):
        hour_block = idle_block((hour, *idle))
        if (ns, pod, device_id, model, node) != key:
            if row is not None:
                objs.append(_pod_day(row, block))
            key = (ns, pod, device_id, model, node)
            row = UsagePodDay(cluster_id=cluster_id, day=day, namespace=ns, pod=pod, device_id=device_id,
                              gpu_model=model, node=node, gpu_seconds=0.0, used_gpu_seconds=0.0,
                              idle_gpu_seconds=0.0, first_hour=epoch_instant(hour))
            block = hour_block
        else:
            block = join_idle_blocks(block, hour_block)
        row.gpu_seconds += gpu_s
        row.used_gpu_seconds += used_s or 0.0
        row.idle_gpu_seconds += idle_s or 0.0
        row.last_hour, row.last_fraction = hour, fraction     # epoch seconds until the row is kept
    if row is not None:
        objs.append(_pod_day(row, block))
    UsagePodDay.objects.bulk_create(objs, batch_size=BULK)
    UsagePodDayBuilt.objects.update_or_create(cluster_id=cluster_id, day=day, defaults={"zone": zone_key})
    return len(objs)


def _pod_day(row: UsagePodDay, block: IdleBlock) -> UsagePodDay:
    row.last_hour = epoch_instant(row.last_hour)
    row.idle_head_seconds, row.idle_tail_seconds = block.head, block.tail
    row.idle_inner_seconds, row.idle_whole = block.inner, block.whole
    return row


_COLUMNS = ("gpu_seconds", "used_gpu_seconds", "idle_gpu_seconds", "mig_seconds")


def _insert_select(cluster_id, day, lo, hi) -> int:
    day_t, hour_t = UsageDay._meta.db_table, UsageHour._meta.db_table
    sums = ", ".join(f"SUM({c})" for c in _COLUMNS)
    with connection.cursor() as cur:
        cur.execute(
            f"INSERT INTO {day_t} (cluster_id, day, namespace, gpu_model, mig_profile, node, "
            f"{', '.join(_COLUMNS)}, energy_joules, sample_count, hour_rows) "
            f"SELECT cluster_id, %s, namespace, gpu_model, mig_profile, node, {sums}, "
            f"COALESCE(SUM(energy_joules), 0), SUM(sample_count), COUNT(*) FROM {hour_t} "
            f"WHERE cluster_id = %s AND hour_start >= %s AND hour_start < %s "
            f"GROUP BY cluster_id, namespace, gpu_model, mig_profile, node",
            [day, cluster_id, lo, hi],
        )
        return cur.rowcount


def _insert_orm(cluster_id, day, lo, hi) -> int:
    rows = (UsageHour.objects.filter(cluster_id=cluster_id, hour_start__gte=lo, hour_start__lt=hi)
            .values("namespace", "gpu_model", "mig_profile", "node")
            .annotate(gpu=Sum("gpu_seconds"), used=Sum("used_gpu_seconds"), idle=Sum("idle_gpu_seconds"),
                      mig=Sum("mig_seconds"), energy=Sum("energy_joules"), samples=Sum("sample_count"),
                      n=Count("id"))
            .order_by())
    objs = [UsageDay(cluster_id=cluster_id, day=day, namespace=r["namespace"], gpu_model=r["gpu_model"],
                     mig_profile=r["mig_profile"], node=r["node"], gpu_seconds=r["gpu"] or 0.0,
                     used_gpu_seconds=r["used"] or 0.0, idle_gpu_seconds=r["idle"] or 0.0,
                     mig_seconds=r["mig"] or 0.0, energy_joules=r["energy"] or 0.0,
                     sample_count=r["samples"] or 0, hour_rows=r["n"]) for r in rows]
    UsageDay.objects.bulk_create(objs, batch_size=BULK)
    return len(objs)

