"""Hourly rollups written by ingest; every report reads these, never Prometheus.

One UsageHour row per (cluster, device, namespace, pod, hour). A row with an empty namespace
holds the device's unallocated seconds for the hour (no pod held it), so capacity is the sum
of `gpu_seconds` over all rows and allocated is the sum over rows with a namespace.

Their keys to the cluster and the device are not enforced by the database: ingest alone writes
these rows, in one transaction holding the cluster's lock, after writing the devices they name;
a cluster or device goes through Django's delete, which cascades. A deferred key checked each of
a run's rows one by one at the commit (docs/performance.md, "Bulk writes"). The unique indexes
lead with the cluster, so it has no index of its own; the device keeps one (a device's delete).
"""
from django.db import models

from apps.clusters.models import Cluster, Device


class UsageHour(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+", db_constraint=False,
                                db_index=False)
    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    namespace = models.CharField(max_length=253, blank=True)
    pod = models.CharField(max_length=253, blank=True)
    hour_start = models.DateTimeField()
    # Denormalised from the device so report queries need no join.
    node = models.CharField(max_length=255, blank=True)
    gpu_model = models.CharField(max_length=200)
    mig_profile = models.CharField(max_length=50, blank=True)
    gpu_fraction = models.FloatField()

    sample_count = models.PositiveIntegerField()
    gpu_seconds = models.FloatField(help_text="interval × fraction over samples: allocated, or unallocated when no namespace")
    used_gpu_seconds = models.FloatField(default=0.0)
    idle_gpu_seconds = models.FloatField(default=0.0)
    mig_seconds = models.FloatField(default=0.0, help_text="raw instance seconds, MIG only")
    unknown_util_samples = models.PositiveIntegerField(default=0, help_text="NaN/Inf or missing utilization")
    # Idle stretches, kept so runs can be joined across hours: the idle run touching the
    # hour's start, the one touching its end, the longest inside, and whether all of it was idle.
    idle_prefix_seconds = models.FloatField(default=0.0)
    idle_suffix_seconds = models.FloatField(default=0.0)
    idle_max_run_seconds = models.FloatField(default=0.0)
    idle_whole_hour = models.BooleanField(default=False)
    fb_used_mib_avg = models.FloatField(null=True, blank=True)
    fb_used_mib_max = models.FloatField(null=True, blank=True)
    power_watts_avg = models.FloatField(null=True, blank=True)
    energy_joules = models.FloatField(null=True, blank=True, help_text="integrated power over the samples")
    dra_claim = models.BooleanField(default=False, db_default=False, help_text="held through a DRA ResourceClaim")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "device", "namespace", "pod", "hour_start"], name="usage_hour_unique",
            ),
        ]
        indexes = [
            models.Index(fields=["hour_start", "cluster"], name="usage_hour_time"),
            models.Index(fields=["cluster", "namespace", "hour_start"], name="usage_hour_ns"),
        ]


class DeviceHealthHour(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+", db_constraint=False,
                                db_index=False)
    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    hour_start = models.DateTimeField()
    temperature_c_avg = models.FloatField(null=True, blank=True)
    temperature_c_max = models.FloatField(null=True, blank=True)
    seconds_above_83c = models.FloatField(default=0.0)
    power_watts_avg = models.FloatField(null=True, blank=True)
    energy_joules = models.FloatField(null=True, blank=True)
    xid_codes = models.JSONField(default=list, blank=True, help_text="distinct non-zero XIDs seen")
    xid_samples = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "device", "hour_start"], name="health_hour_unique"),
        ]
        indexes = [models.Index(fields=["hour_start", "cluster"], name="health_hour_time")]


class QueuedDemandHour(models.Model):
    """Requests of Pending pods: demand that held no device (docs/accounting.md, queued GPU-second)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+", db_constraint=False,
                                db_index=False)
    namespace = models.CharField(max_length=253)
    pod = models.CharField(max_length=253)
    resource = models.CharField(max_length=100)
    hour_start = models.DateTimeField()
    requested = models.FloatField(help_text="largest request seen while pending (devices)")
    pending_seconds = models.FloatField()
    queued_gpu_seconds = models.FloatField(help_text="interval × requested × fraction over pending samples")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "namespace", "pod", "resource", "hour_start"], name="queued_hour_unique",
            ),
        ]
        indexes = [models.Index(fields=["hour_start", "cluster"], name="queued_hour_time")]


class QuotaHour(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+", db_constraint=False,
                                db_index=False)
    namespace = models.CharField(max_length=253)
    resource = models.CharField(max_length=100)
    hour_start = models.DateTimeField()
    hard = models.FloatField(null=True, blank=True)
    used_max = models.FloatField(null=True, blank=True)
    seconds_at_hard = models.FloatField(default=0.0, help_text="time with used >= hard")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "namespace", "resource", "hour_start"], name="quota_hour_unique"),
        ]


class PodOwner(models.Model):
    """The workload a GPU pod belongs to, from kube-state-metrics' owner series
    (docs/advice-and-alerts.md, "Right-sizing"): the pod's controlling owner, followed one step
    up where kube-state-metrics says more (ReplicaSet → Deployment, Job → CronJob, a
    StatefulSet pod labelled `notebook-name` → Notebook). A pod without one is its own workload."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+", db_constraint=False,
                                db_index=False)
    namespace = models.CharField(max_length=253)
    pod = models.CharField(max_length=253)
    owner_kind = models.CharField(max_length=100, help_text="the pod's controller, e.g. ReplicaSet")
    owner_name = models.CharField(max_length=253)
    workload_kind = models.CharField(max_length=100, help_text="e.g. Deployment, StatefulSet, Job, CronJob, Notebook")
    workload_name = models.CharField(max_length=253)
    last_seen = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "namespace", "pod"], name="pod_owner_unique"),
        ]
