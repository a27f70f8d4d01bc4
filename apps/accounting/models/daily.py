"""Daily rollups: what dashboards and statements read for whole billing days.

One UsageDay row per (cluster, billing-zone day, namespace, GPU model, MIG profile, node),
holding the sums of the day's UsageHour rows (an hour belongs to the day its start falls in,
in BILLING_TIMEZONE). Node stays in the key because price classes are decided per node by
NodePool at read time. Ingest recomputes every day it touches, from UsageHour, inside its
own transaction; `manage.py rebuild_rollups` recomputes any range.

UsageDayBuilt marks a (cluster, day) whose UsageDay rows equal the hourly rows, and the zone
they were cut in: readers use the daily table only for days marked in the current zone, and
fall back to the hourly table otherwise (a new zone, rows written by hand, an old database).
"""
from django.db import models

from apps.clusters.models import Cluster


class UsageDay(models.Model):
    # No separate FK index: the unique index leads with cluster. Not enforced by the database, as
    # the hourly rollups' (models/rollups.py): ingest and `rebuild_rollups` write these rows.
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+", db_index=False,
                                db_constraint=False)
    day = models.DateField(help_text="billing-zone day")
    namespace = models.CharField(max_length=253, blank=True)
    gpu_model = models.CharField(max_length=200)
    mig_profile = models.CharField(max_length=50, blank=True)
    node = models.CharField(max_length=255, blank=True)

    gpu_seconds = models.FloatField(default=0.0)
    used_gpu_seconds = models.FloatField(default=0.0)
    idle_gpu_seconds = models.FloatField(default=0.0)
    mig_seconds = models.FloatField(default=0.0)
    energy_joules = models.FloatField(default=0.0)
    sample_count = models.BigIntegerField(default=0)
    hour_rows = models.PositiveIntegerField(default=0, help_text="UsageHour rows summed")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "day", "namespace", "gpu_model", "mig_profile", "node"],
                                    name="usage_day_unique"),
        ]
        # The unique index (cluster, day, …) serves per-cluster reads and the rebuild's delete;
        # this one serves the all-clusters month that dashboards and statements ask for.
        indexes = [models.Index(fields=["day", "cluster"], name="usage_day_time")]


class UsageDayBuilt(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+", db_index=False,
                                db_constraint=False)
    day = models.DateField()
    zone = models.CharField(max_length=64)
    built_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "day"], name="usage_day_built_unique")]


class UsagePodDay(models.Model):
    """One device-pod's allocated hours of one billing day, summed, with the day's idle block
    (`core.measures.IdleBlock`): what the idle list reads for whole days instead of the hours
    (docs/performance.md, "The longest reads"). Written with UsageDay by `rebuild_days`; only
    rows with a namespace and allocated seconds. Not enforced by the database, as UsageDay."""
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+", db_index=False,
                                db_constraint=False)
    day = models.DateField(help_text="billing-zone day")
    namespace = models.CharField(max_length=253)
    pod = models.CharField(max_length=253)
    device_id = models.BigIntegerField()
    gpu_model = models.CharField(max_length=200)
    node = models.CharField(max_length=255, blank=True)

    gpu_seconds = models.FloatField(default=0.0)
    used_gpu_seconds = models.FloatField(default=0.0)
    idle_gpu_seconds = models.FloatField(default=0.0)
    first_hour = models.DateTimeField()
    last_hour = models.DateTimeField()
    last_fraction = models.FloatField(help_text="gpu_fraction of the day's last hour")
    idle_head_seconds = models.FloatField(default=0.0)
    idle_tail_seconds = models.FloatField(default=0.0)
    idle_inner_seconds = models.FloatField(default=0.0)
    idle_whole = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "day", "namespace", "pod", "device_id", "gpu_model", "node"],
                                    name="usage_pod_day_unique"),
        ]
        indexes = [models.Index(fields=["day", "cluster"], name="usage_pod_day_time"),
                   models.Index(fields=["cluster", "namespace", "pod", "day"], name="usage_pod_day_pod")]


class UsagePodDayBuilt(models.Model):
    """A (cluster, day) whose UsagePodDay rows equal the hourly rows, in `zone`: the idle list
    reads the summary only for such days, the hours otherwise (an old database before the
    rebuild, a new zone)."""
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+", db_index=False,
                                db_constraint=False)
    day = models.DateField()
    zone = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "day"], name="usage_pod_day_built_unique")]
