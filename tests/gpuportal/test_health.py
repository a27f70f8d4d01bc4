"""/healthz and /metrics: open, JSON / Prometheus text, ingest ages from the database."""
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.ingest.models import IngestRun
from tests.support.promtext import sample_values
from tests.support.factories import make_cluster

pytestmark = pytest.mark.django_db


@pytest.fixture
def clusters(settings):
    settings.STALE_INGEST_HOURS = 3
    now = timezone.now()
    fresh = make_cluster("fresh", prometheus_url="http://p:9090", ingested_until=now - timedelta(hours=1))
    old = make_cluster('old"one', prometheus_url="http://q:9090", bearer_token="s3cret",
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
    before = sample_values(client.get("/metrics").content.decode())
    client.get("/healthz")
    client.get("/healthz")
    r = client.get("/metrics")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/plain; version=0.0.4")
    text = r.content.decode()
    values = sample_values(text)
    assert values[("gpuportal_up", ())] == 1
    assert values[("gpuportal_ingest_rows_written_total", (("cluster", "fresh"),))] == 150
    assert values[("gpuportal_ingest_runs_succeeded_total", (("cluster", "fresh"),))] == 2
    assert values[("gpuportal_ingest_task_failures_total", (("cluster", 'old"one'),))] == 1
    assert 'gpuportal_ingest_task_failures_total{cluster="old\\"one"} 1.0' in text   # escaped, not broken
    assert 3600 <= values[("gpuportal_ingest_lag_seconds", (("cluster", "fresh"),))] < 3700
    # In one process (no PROMETHEUS_MULTIPROC_DIR) the request figures are this process's own.
    healthz_ok = ("gpuportal_http_requests_total", (("method", "GET"), ("route", "/healthz"), ("status", "200")))
    assert values[healthz_ok] - before.get(healthz_ok, 0) == 2
    healthz_latency = ("gpuportal_request_duration_seconds_count", (("method", "GET"), ("route", "/healthz")))
    assert values[healthz_latency] - before.get(healthz_latency, 0) == 2
    assert "s3cret" not in text


def test_request_labels_stay_bounded(client):
    """Paths and invented methods never become label values: only route patterns and known verbs."""
    before = sample_values(client.get("/metrics").content.decode())
    client.get("/no/such/page/4711")
    client.generic("BREW", "/healthz")
    values = sample_values(client.get("/metrics").content.decode())
    unmatched = ("gpuportal_http_requests_total", (("method", "GET"), ("route", "unmatched"), ("status", "404")))
    assert values[unmatched] - before.get(unmatched, 0) == 1
    brew = ("gpuportal_http_requests_total", (("method", "other"), ("route", "/healthz"), ("status", "405")))
    assert values[brew] - before.get(brew, 0) == 1
    assert not any("4711" in v or "BREW" in v for _, labels in values for _, v in labels)
