"""The daily rollup (UsageDay) kept equal to the hourly one (days: `calendar/zone.py`).

An hour belongs to the billing day its start falls in (as `TruncDate(hour_start, zone)` does),
so a day is the hours with `day_start <= hour_start < next day_start`, both local midnights
expressed in UTC. `rebuild_days` recomputes whole days from UsageHour; callers run it inside
the transaction that rewrote the hours, so readers never see the two tables disagree.
"""
from __future__ import annotations

from datetime import date, timedelta

from django.db import connection
from django.db.models import Count, Sum

from apps.accounting.models import UsageDay, UsageDayBuilt, UsageHour
from apps.accounting.calendar.zone import billing_zone, day_start

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
    return written


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

