"""/healthz and /metrics: open, JSON / Prometheus text, ingest ages from the database."""
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.clusters.models import Cluster
from apps.ingest.models import IngestRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def clusters(settings):
    settings.STALE_INGEST_HOURS = 3
    now = timezone.now()
    fresh = Cluster.objects.create(name="fresh", prometheus_url="http://p:9090", ingested_until=now - timedelta(hours=1))
    old = Cluster.objects.create(name='old"one', prometheus_url="http://q:9090", bearer_token="s3cret",
                                 ingested_until=now - timedelta(hours=10))
    for c, rows, status in ((fresh, 120, "succeeded"), (fresh, 30, "succeeded"), (old, 5, "failed")):
        IngestRun.objects.create(cluster=c, window_start=now - timedelta(hours=2), window_end=now, status=status,
                                 rows_written=rows, finished_at=now - timedelta(minutes=10))
    return fresh, old


def test_healthz_reports_database_redis_and_ingest_ages(client, settings, clusters):
    settings.REDIS_URL = ""
    r = client.get("/healthz")
    assert r.status_code == 200
    body = r.json()
    assert body["database"] == "ok" and body["redis"] == "not configured" and body["ingest"] == "stale"
    by_name = {c["cluster"]: c for c in body["clusters"]}
    assert by_name["fresh"]["stale"] is False and 590 <= by_name["fresh"]["last_success_age_seconds"] <= 700
    assert by_name['old"one']["stale"] is True and by_name['old"one']["last_success_age_seconds"] is None
    assert "s3cret" not in r.content.decode() and "http://" not in r.content.decode()
    assert client.get("/healthz?strict=1").status_code == 503


def test_healthz_is_503_when_redis_is_down(client, settings, clusters):
    settings.REDIS_URL = "redis://127.0.0.1:9/0"   # nothing listens there
    r = client.get("/healthz")
    assert r.status_code == 503
    assert r.json()["redis"].startswith("error") and r.json()["status"] == "unhealthy"


def test_metrics_in_prometheus_text(client, clusters):
    client.get("/healthz")
    r = client.get("/metrics")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/plain")
    text = r.content.decode()
    assert "gpuportal_up 1" in text
    assert 'gpuportal_ingest_rows_written_total{cluster="fresh"} 150' in text
    assert 'gpuportal_ingest_task_failures_total{cluster="old\\"one"} 1' in text
    assert 'gpuportal_ingest_lag_seconds{cluster="fresh"} 36' in text   # 3600.x seconds
    assert 'gpuportal_request_duration_seconds_count{route="/healthz",method="GET"}' in text
    assert "s3cret" not in text
