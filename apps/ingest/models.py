"""Ingest's run log: one `IngestRun` per window ingested, with its outcome and what it said."""
from django.db import models

from apps.clusters.models import Cluster


class IngestRun(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        SKIPPED = "skipped"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="ingest_runs")
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    trigger = models.CharField(max_length=20, default="command")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    rows_written = models.PositiveIntegerField(default=0)
    samples_read = models.PositiveBigIntegerField(default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_seconds = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)
    warnings = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["cluster", "-started_at"])]

    def __str__(self):
        return f"{self.cluster} {self.window_start:%Y-%m-%d %H:%M}–{self.window_end:%H:%M} {self.status}"


def first_ingested_hour(**kwargs):
    """The start of the first succeeded ingest run's window, or None (`history_asked`)."""
    return (IngestRun.objects.filter(status=IngestRun.Status.SUCCEEDED)
            .aggregate(first=models.Min("window_start"))["first"])


# In each warning of a GPU found in another cluster's rows in the same hour (`pipeline.counted_twice`).
COUNTED_TWICE = "its hours are billed twice"


def counted_twice_by_cluster() -> dict[str, int]:
    """Cluster name -> the GPUs its last succeeded ingest run found in another cluster's rows in
    the same hour (docs/ingest.md, "The same GPU in two clusters"): /metrics and the admin's
    banner on the ingest runs."""
    out: dict[str, int] = {}
    runs = (IngestRun.objects.filter(status=IngestRun.Status.SUCCEEDED).order_by("cluster_id", "-finished_at")
            .values_list("cluster__name", "warnings"))
    for name, warnings in runs:
        if name not in out:        # the first row of a cluster is its last run
            out[name] = sum(1 for w in warnings or () if COUNTED_TWICE in w)
    return out
