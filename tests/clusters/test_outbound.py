"""A cluster's Prometheus URL and an alert webhook URL point wherever an admin types: the
reply of whatever answers there is never stored or shown beyond its HTTP status, and
OUTBOUND_ALLOWED_HOSTS limits where they may point (docs/security.md, "Outbound requests").
On main, 200 to 500 characters of the reply were stored and shown on the pages."""
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from django.core.exceptions import ValidationError

from apps.clusters.models import Cluster
from apps.ingest.prometheus import PrometheusClient
from apps.ingest.prometheus_http import PrometheusError
from apps.notifications.channels import post_webhook
from tests.support.fake_http import answering

pytestmark = pytest.mark.django_db
INTERNAL = "root:x:0:0:internal-admin-page-secret"


@contextmanager
def recorded(status, body, content_type="application/json"):
    """A server answering `status` and `body`, keeping the paths it was asked (`seen`)."""
    seen = []

    def answer(request):
        seen.append(request.path)
        return status, body, content_type
    with answering(answer) as url:
        yield SimpleNamespace(url=url, seen=seen)


@pytest.mark.parametrize("status, body, content_type, said", [
    (500, f"<html><body>{INTERNAL}</body></html>", "text/html", "answered HTTP 500"),
    (400, '{"status":"error","errorType":"bad_data","error":"%s"}' % INTERNAL, "application/json",
     "rejected the query"),
    (404, '{"status":"error","error":"%s"}' % INTERNAL, "application/json", "answered HTTP 404"),
])
def test_a_clusters_url_reads_back_only_a_status(status, body, content_type, said):
    with recorded(status, body, content_type) as server:
        cluster = Cluster(name="lab", prometheus_url=server.url)
        with pytest.raises(PrometheusError) as failed:
            PrometheusClient.for_cluster(cluster, 5).check()
    assert said in str(failed.value) and f"HTTP {status}" in str(failed.value)
    assert "internal-admin-page" not in str(failed.value)


def test_a_webhooks_reply_is_stored_as_its_status_only():
    with recorded(502, f"<html>{INTERNAL}</html>", "text/html") as server:
        ok, code, error = post_webhook(server.url + "/hook", {"text": "x"})
    assert (ok, code, error) == (False, 502, "HTTP 502")


def test_the_allow_list_refuses_other_hosts_on_save_and_before_sending(settings):
    settings.OUTBOUND_ALLOWED_HOSTS = ["prometheus", ".example.com"]
    for url in ("http://prometheus:9090", "https://thanos.example.com/query", "https://example.com"):
        Cluster(name="ok", prometheus_url=url).full_clean()
    for url in ("http://169.254.169.254/latest/meta-data", "http://127.0.0.1:9090", "https://example.com.evil.io"):
        with pytest.raises(ValidationError, match="is not in OUTBOUND_ALLOWED_HOSTS"):
            Cluster(name="bad", prometheus_url=url).full_clean()
    with recorded(200, "{}") as server:
        cluster = Cluster(name="lab", prometheus_url=server.url)       # saved before the allow-list
        with pytest.raises(PrometheusError, match="the host 127.0.0.1 is not in OUTBOUND_ALLOWED_HOSTS"):
            PrometheusClient.for_cluster(cluster, 5)
        ok, code, error = post_webhook(server.url + "/hook", {"text": "x"})
        assert not ok and code is None and "not in OUTBOUND_ALLOWED_HOSTS" in error
        assert server.seen == []


def test_a_budgets_webhook_outside_the_allow_list_is_refused(settings):
    from apps.recommendations.models import TeamBudget
    from apps.teams.models import Team
    settings.OUTBOUND_ALLOWED_HOSTS = [".example.com"]
    budget = TeamBudget(team=Team.objects.create(name="A"), monthly_amount=10, webhook_url="http://10.0.0.1/hook")
    with pytest.raises(ValidationError, match="10.0.0.1 is not in OUTBOUND_ALLOWED_HOSTS"):
        budget.full_clean()
    budget.webhook_url = "https://hooks.example.com/gpu"
    budget.full_clean()
