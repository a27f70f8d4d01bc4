"""/metrics and the ingest detail of /healthz answer only the scraper (docs/deploy.md "/metrics"):
`Authorization: Bearer <METRICS_TOKEN>`, or anyone when METRICS_PUBLIC is on (the default only
with DEBUG on). Through the shipped Ingress they were open to the world: cluster names, ingest
lag, per-route counts, and each hit of /healthz aggregated every ingest run."""
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.factories import make_cluster

pytestmark = pytest.mark.django_db
TOKEN = "scrape-token-0123456789abcdef"


@pytest.fixture
def production(settings):
    settings.METRICS_PUBLIC = False
    settings.METRICS_TOKEN = ""
    settings.REDIS_URL = ""
    make_cluster("secret-lab-a", prometheus_url="http://p:9090",
                           ingested_until=timezone.now() - timedelta(hours=1))
    return settings


def test_without_a_token_metrics_are_closed_and_healthz_says_only_up_or_down(client, production):
    r = client.get("/metrics")
    assert r.status_code == 401 and r["WWW-Authenticate"].startswith("Bearer")
    assert b"gpuportal_" not in r.content
    health = client.get("/healthz")
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "database": "ok", "redis": "not configured"}
    assert client.get("/healthz?strict=1").status_code == 401


def test_the_scrapers_token_opens_both(client, production):
    production.METRICS_TOKEN = TOKEN
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong-token").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Token {TOKEN}").status_code == 401
    r = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert r.status_code == 200 and b'gpuportal_ingest_lag_seconds{cluster="secret-lab-a"}' in r.content
    health = client.get("/healthz", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").json()
    assert [c["cluster"] for c in health["clusters"]] == ["secret-lab-a"] and health["ingest"] == "ok"
    assert client.get("/healthz?strict=1", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200


def test_a_token_is_needed_even_when_metrics_are_public(client, production):
    production.METRICS_PUBLIC = True
    assert client.get("/metrics").status_code == 200
    production.METRICS_TOKEN = TOKEN
    assert client.get("/metrics").status_code == 401
