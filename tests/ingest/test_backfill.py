"""Backfill per billing day: days finish in any order, the watermark only crosses contiguous ones."""
from datetime import datetime, timedelta, timezone
from unittest import mock

import pytest
from django.core.management import call_command

from apps.ingest.models import IngestRun
from apps.ingest.pipeline import IngestBusy, cluster_lock, ingest
from apps.ingest.tasks import backfill_windows
from apps.simulator.builders import build_scenario
from apps.simulator.demo import SimulatorFetcher
from tests.support.factories import make_cluster

pytestmark = pytest.mark.django_db
START = datetime(2026, 10, 5, tzinfo=timezone.utc)
D = timedelta(days=1)


@pytest.fixture(scope="module")
def fetcher():
    return SimulatorFetcher(build_scenario(name="bf", start=int(START.timestamp()), hours=72,
                                           interval_seconds=600, seed=5))


@pytest.fixture
def cluster(settings):
    settings.BILLING_TIMEZONE = "UTC"
    return make_cluster("lab", prometheus_url="http://127.0.0.1:9")


def test_windows_are_billing_days_and_seed_the_watermark(settings, cluster):
    settings.BILLING_TIMEZONE = "America/New_York"   # midnight = 04:00 UTC in October
    windows = backfill_windows(cluster, START, START + 2 * D)
    assert [(lo.hour, hi.hour) for lo, hi in windows] == [(0, 4), (4, 4), (4, 0)]
    assert windows[0][0] == START and windows[-1][1] == START + 2 * D
    cluster.refresh_from_db()
    assert cluster.ingested_until == START


def test_watermark_moves_only_over_contiguous_days(cluster, fetcher):
    backfill_windows(cluster, START, START + 3 * D)
    ingest(cluster, START + 2 * D, START + 3 * D, fetcher=fetcher)       # day 3 first
    cluster.refresh_from_db()
    assert cluster.ingested_until == START                               # a gap before it
    ingest(cluster, START, START + D, fetcher=fetcher)                   # day 1
    cluster.refresh_from_db()
    assert cluster.ingested_until == START + D                           # day 2 still missing
    ingest(cluster, START + D, START + 2 * D, fetcher=fetcher)           # day 2 closes the gap
    cluster.refresh_from_db()
    assert cluster.ingested_until == START + 3 * D                       # ... and day 3 counts now


def test_a_failed_day_holds_the_watermark(cluster, fetcher):
    backfill_windows(cluster, START, START + 2 * D)

    def broken(window):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        ingest(cluster, START, START + D, fetcher=broken)
    ingest(cluster, START + D, START + 2 * D, fetcher=fetcher)
    cluster.refresh_from_db()
    assert cluster.ingested_until == START
    assert IngestRun.objects.filter(status="failed").count() == 1


def test_days_lock_separately(cluster, fetcher):
    day1 = START.date()
    with cluster_lock(cluster.pk, days=[day1]):
        ingest(cluster, START + D, START + 2 * D, fetcher=fetcher)      # another day: runs
        with pytest.raises(IngestBusy):
            ingest(cluster, START + D / 24, START + D / 12, fetcher=fetcher)  # the same day: busy
    with cluster_lock(cluster.pk):                                        # the whole cluster
        with pytest.raises(IngestBusy):
            ingest(cluster, START + D, START + 2 * D, fetcher=fetcher)
    with cluster_lock(cluster.pk, days=[day1]):
        with pytest.raises(IngestBusy):
            with cluster_lock(cluster.pk):
                pass


def test_backfill_command_runs_each_day(cluster, fetcher):
    with mock.patch("apps.ingest.tasks.ingest", side_effect=lambda c, s, e, trigger: ingest(
            c, s, e, trigger=trigger, fetcher=fetcher)):
        call_command("backfill", "--cluster", "lab", "--start", "2026-10-05", "--end", "2026-10-08")
    runs = IngestRun.objects.filter(cluster=cluster, trigger="backfill", status="succeeded")
    assert runs.count() == 3
    cluster.refresh_from_db()
    assert cluster.ingested_until == START + 3 * D
