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


# ---------------------------------------------------------------- issue 42: the URL as the client reads it
BACKSLASH = "http://127.0.0.2:{port}\\@localhost/"


@contextmanager
def other_host():
    """A server on 127.0.0.2, a loopback address the allow-list does not name: anything it is
    asked is a request that went where the rules forbid."""
    seen = []

    def answer(request):
        seen.append((request.command, request.path, request.headers.get("Authorization")))
        return 200, '{"status":"success","data":{"resultType":"vector","result":[]}}', "application/json"
    with answering(answer, host="127.0.0.2") as url:
        yield SimpleNamespace(url=url, port=int(url.rsplit(":", 1)[1]), seen=seen)


def test_a_backslash_before_the_at_sign_is_refused_everywhere(settings):
    """urlsplit reads the host after the `@` (localhost, allowed); urllib3 ends the host at the
    backslash and connects to 127.0.0.2. On main all three passed and 127.0.0.2 got the token."""
    from apps.recommendations.models import TeamBudget
    from apps.teams.models import Team
    settings.OUTBOUND_ALLOWED_HOSTS = ["localhost", ".example.com"]
    with other_host() as target:
        url = BACKSLASH.format(port=target.port)
        with pytest.raises(ValidationError, match="contains a backslash"):
            Cluster(name="lab", prometheus_url=url).full_clean()
        budget = TeamBudget(team=Team.objects.create(name="A"), monthly_amount=10, webhook_url=url)
        with pytest.raises(ValidationError, match="contains a backslash"):
            budget.full_clean()
        cluster = Cluster(name="lab", prometheus_url=url, bearer_token_source="")   # saved before the rule
        cluster.bearer_token = "s3cret-token"
        with pytest.raises(PrometheusError, match="contains a backslash"):
            PrometheusClient.for_cluster(cluster, 5).check()
        ok, code, error = post_webhook(url, {"text": "x"})
        assert (ok, code) == (False, None) and "contains a backslash" in error
        assert target.seen == []


@pytest.mark.parametrize("url, said", [
    ("http://alice:pw@localhost:9090", "carries a user name or password"),
    ("http://alice@localhost:9090", "carries a user name or password"),
    ("ftp://localhost/x", "not an http or https URL"),
    ("file:///etc/passwd", "not an http or https URL"),
    ("http://127.0.0.1:9090", "not in OUTBOUND_ALLOWED_HOSTS"),
    ("http://[::1]:9090", "not in OUTBOUND_ALLOWED_HOSTS"),
    ("http://2130706433:9090", "four decimal numbers"),
    ("http://127.1:9090", "four decimal numbers"),
    ("http://0x7f.0.0.1:9090", "four decimal numbers"),
    ("http://local host:9090", "a space or control character"),
])
def test_urls_the_client_would_read_otherwise_are_refused(settings, url, said):
    from apps.clusters.outbound import outbound_problem
    settings.OUTBOUND_ALLOWED_HOSTS = ["localhost", ".example.com"]
    assert said in outbound_problem(url)
    with pytest.raises(ValidationError) as refused:
        Cluster(name="lab", prometheus_url=url).full_clean()
    assert "pw" not in str(refused.value)
    ok, code, error = post_webhook(url, {"text": "x"})
    assert not ok and said in error


def test_credentials_in_a_url_are_never_repeated(settings):
    """A row saved before the rule: the ingest error and the cluster list show *** for them."""
    from django.contrib.admin.sites import site
    settings.OUTBOUND_ALLOWED_HOSTS = []
    cluster = Cluster(name="lab", prometheus_url="http://alice:hunter2@localhost:9090")
    with pytest.raises(PrometheusError) as failed:
        PrometheusClient.for_cluster(cluster, 5)
    assert "hunter2" not in str(failed.value) and "credential fields" in str(failed.value)
    assert "http://***@localhost:9090" in str(failed.value)
    assert site._registry[Cluster].prometheus_address(cluster) == "http://***@localhost:9090"


def test_link_local_addresses_are_never_contacted(settings):
    settings.OUTBOUND_ALLOWED_HOSTS = []
    for url in ("http://169.254.169.254/latest/meta-data", "http://[fe80::1]/", "http://0.0.0.0:9090"):
        with pytest.raises(ValidationError, match="never contacted"):
            Cluster(name="bad", prometheus_url=url).full_clean()
    settings.OUTBOUND_ALLOWED_HOSTS = ["169.254.0.0/16"]        # named on purpose: allowed
    Cluster(name="ok", prometheus_url="http://169.254.169.254/").full_clean()


def test_the_address_a_name_resolves_to_is_checked_when_sending(settings):
    """`.localhost` admits the name localhost by its spelling, but it resolves to a loopback
    address, which only a network entry (or naming the host exactly) allows. Checked on the
    connected socket, before a byte is sent."""
    with recorded(200, '{"status":"success","data":{"resultType":"vector","result":[{"value":[0,"1"]}]}}') as server:
        url = server.url.replace("127.0.0.1", "localhost")
        settings.OUTBOUND_ALLOWED_HOSTS = [".localhost"]
        assert Cluster(name="lab", prometheus_url=url).full_clean() is None     # its spelling is fine
        with pytest.raises(PrometheusError, match=r"resolves to 127\.0\.0\.1, a loopback, private"):
            PrometheusClient(url, timeout_seconds=5).check()
        ok, code, error = post_webhook(url + "/hook", {"text": "x"})
        assert not ok and "resolves to 127.0.0.1" in error
        assert server.seen == []
        settings.OUTBOUND_ALLOWED_HOSTS = [".localhost", "127.0.0.0/8"]
        PrometheusClient(url, timeout_seconds=5).check()
        settings.OUTBOUND_ALLOWED_HOSTS = ["localhost"]                          # the host named exactly
        PrometheusClient(url, timeout_seconds=5).check()
        assert post_webhook(url + "/hook", {"text": "x"}).ok
        assert server.seen == ["/api/v1/query?query=vector%281%29", "/api/v1/query?query=vector%281%29", "/hook"]


@contextmanager
def redirecting_to(target_url):
    seen = []

    def answer(request):
        seen.append(request.path)
        return 307, "", "text/plain", {"Location": target_url + request.path}
    with answering(answer) as url:
        yield SimpleNamespace(url=url.replace("127.0.0.1", "localhost"), seen=seen)


@pytest.mark.parametrize("allowed", [["localhost"], []])
def test_a_redirect_is_an_error_naming_its_target(settings, allowed):
    """On main a 307 from an allowed host to 127.0.0.2 delivered the webhook's body, and the
    Prometheus GET followed it (without its Authorization header)."""
    settings.OUTBOUND_ALLOWED_HOSTS = allowed
    with other_host() as target, redirecting_to(target.url) as first:
        ok, code, error = post_webhook(first.url + "/hook", {"text": "secret body"})
        assert (ok, code) == (False, None)
        assert f"a redirect to '{target.url}/hook'" in error and "follows no redirect" in error
        with pytest.raises(PrometheusError, match=f"a redirect to '{target.url}/api/v1/query"):
            PrometheusClient(first.url, bearer_token="s3cret", timeout_seconds=5).check()
        assert len(first.seen) == 2 and target.seen == []
