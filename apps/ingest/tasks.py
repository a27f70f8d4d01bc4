"""Celery tasks: thin, repeatable, locked per cluster, recorded as IngestRun rows."""
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError
from django.utils import timezone

from apps.accounting.calendar.zone import day_windows
from apps.accounting.calendar.parse import parse_instant
from apps.clusters.models import Cluster

from .pipeline import IngestBusy, IngestError, floor_hour, ingest
from .prometheus_http import PrometheusError

# A cluster that has never been ingested starts this far back.
FIRST_BACKFILL = timedelta(days=1)


@shared_task(
    bind=True,
    # A dropped database connection rolls the run back; the retry starts it afresh.
    autoretry_for=(IngestError, PrometheusError, DatabaseError),
    retry_backoff=settings.INGEST_RETRY_BACKOFF_SECONDS,
    retry_backoff_max=1800,
    retry_jitter=True,
    max_retries=8,
    soft_time_limit=3300,
    time_limit=3600,
    acks_late=True,
)
def ingest_cluster_window(self, cluster_id: int, start: str, end: str, trigger: str = "beat"):
    cluster = Cluster.objects.get(pk=cluster_id)
    run = ingest(cluster, parse_instant(start), parse_instant(end), trigger=trigger)
    return {"run": run.pk, "rows": run.rows_written}


def backfill_windows(cluster: Cluster, start, end) -> list:
    """[start, end) widened to whole hours and cut into billing days, one atomic ingest each.

    A cluster without a watermark gets one at the start, so out-of-order days move it only
    over contiguous succeeded days (pipeline._advance_watermark).
    """
    start, end = floor_hour(start), min(end, floor_hour(timezone.now()))
    if end <= start:
        raise IngestError(f"nothing to backfill: {start.isoformat()}..{end.isoformat()} holds no closed hour")
    if cluster.ingested_until is None:
        Cluster.objects.filter(pk=cluster.pk, ingested_until__isnull=True).update(ingested_until=start)
        cluster.ingested_until = start
    return day_windows(start, end)


@shared_task
def ingest_due_clusters():
    """Queue every closed hour since each cluster's watermark, a billing day per task.

    Days of one cluster lock separately, so several workers ingest them side by side.
    """
    now = timezone.now()
    last_closed = floor_hour(now)
    queued = []
    settle = timedelta(hours=settings.INGEST_SETTLE_HOURS)
    for cluster in Cluster.objects.filter(archived=False):     # archived: no longer ingested
        # Once per closed hour and cluster: beat ticks more often than hours close.
        if not cache.add(f"gpuportal:ingest-queued:{cluster.pk}:{last_closed.isoformat()}", 1, 3 * 3600):
            continue
        if cluster.ingested_until is None:
            start = last_closed - FIRST_BACKFILL
        else:
            start = min(cluster.ingested_until, last_closed - settle)
        for lo, hi in day_windows(start, last_closed):
            ingest_cluster_window.delay(cluster.pk, lo.isoformat(), hi.isoformat(), "beat")
            queued.append((cluster.name, lo.isoformat(), hi.isoformat()))
    return queued


__all__ = ["ingest_cluster_window", "ingest_due_clusters", "backfill_windows", "IngestBusy"]
