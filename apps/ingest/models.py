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
