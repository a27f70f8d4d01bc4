"""Cluster credentials are never kept in plain text and never shown back: read from a mounted
file or an environment variable, or stored encrypted (docs/security.md)."""
import json
import re
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import connection

from apps.clusters.models import Cluster
from apps.clusters.secrets import PREFIX, seal, unseal
from apps.ingest.prometheus import PrometheusClient
from apps.ingest.prometheus_http import PrometheusError
from tests.support.fake_http import answering
from tests.support.factories import make_cluster

pytestmark = pytest.mark.django_db
VECTOR_1 = {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [0, "1"]}]}}


@contextmanager
def guarded_prometheus(expected):
    """Answers `vector(1)` only to `Authorization: <expected>`; 401 otherwise. `seen`: the
    Authorization header of each request."""
    seen = []

    def answer(request):
        seen.append(request.headers.get("Authorization"))
        ok = request.headers.get("Authorization") == expected
        return (200 if ok else 401), json.dumps(VECTOR_1 if ok else {"status": "error"}), "application/json"
    with answering(answer) as url:
        yield SimpleNamespace(url=url, seen=seen)


@pytest.fixture
def guarded():
    with guarded_prometheus("Bearer tok-123") as server:
        yield server


def raw_column(cluster, name):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {name} FROM clusters_cluster WHERE id = %s", [cluster.pk])
        return cursor.fetchone()[0]


def test_a_stored_token_is_encrypted_and_still_works(guarded):
    cluster = make_cluster("lab", prometheus_url=guarded.url, bearer_token="tok-123")
    stored = raw_column(cluster, "bearer_token")
    assert stored.startswith(PREFIX) and "tok-123" not in stored
    PrometheusClient.for_cluster(Cluster.objects.get(pk=cluster.pk), 5).check()
    assert guarded.seen[-1] == "Bearer tok-123"


def test_a_token_file_is_read_at_each_use(guarded, tmp_path, settings):
    settings.CLUSTER_CREDENTIALS_DIR = str(tmp_path)
    token = tmp_path / "token"
    token.write_text("tok-123\n")
    cluster = make_cluster("lab", prometheus_url=guarded.url, bearer_token="stale",
                                     bearer_token_source=f"file:{token}")
    PrometheusClient.for_cluster(cluster, 5).check()                 # the file wins over the stored value
    token.write_text("rotated")                                      # a rotated Secret is picked up
    with pytest.raises(PrometheusError):
        PrometheusClient.for_cluster(cluster, 5).check()
    assert guarded.seen[-1] == "Bearer rotated"


def test_an_environment_variable_and_basic_auth(monkeypatch):
    monkeypatch.setenv("PROMETHEUS_PASSWORD", "s3cret")
    cluster = Cluster(name="lab", prometheus_url="http://x", basic_auth_user="portal",
                      basic_auth_password_source="env:PROMETHEUS_PASSWORD")
    assert cluster.credentials() == ("", ("portal", "s3cret"))


@pytest.mark.parametrize("source, message", [
    ("file:/var/run/secrets/prometheus/no-such-token",
     "cluster lab: the bearer token file /var/run/secrets/prometheus/no-such-token cannot be read"),
    ("env:PROMETHEUS_NO_SUCH_VARIABLE_X", "cluster lab: the bearer token variable PROMETHEUS_NO_SUCH_VARIABLE_X is not set"),
])
def test_an_unreadable_source_is_one_line(source, message):
    cluster = Cluster(name="lab", prometheus_url="http://x", bearer_token_source=source)
    with pytest.raises(PrometheusError, match=message):
        PrometheusClient.for_cluster(cluster, 5)


@pytest.fixture
def listener():
    with guarded_prometheus("never") as server:
        yield server


@pytest.mark.parametrize("source, problem", [
    ("file:/etc/passwd", "/etc/passwd is outside /var/run/secrets/prometheus (CLUSTER_CREDENTIALS_DIR)"),
    ("file:/proc/self/environ", "/proc/self/environ is outside /var/run/secrets/prometheus"),
    ("file:/var/run/secrets/prometheus/../../../etc/passwd", "is outside /var/run/secrets/prometheus"),
    ("env:SECRET_KEY", "SECRET_KEY does not start with PROMETHEUS_ (CLUSTER_CREDENTIALS_ENV_PREFIX)"),
    ("env:DATABASE_URL", "DATABASE_URL does not start with PROMETHEUS_"),
])
def test_a_source_outside_the_allowed_places_is_refused_and_nothing_is_sent(listener, source, problem):
    """Pointed at a listener, main sent /etc/passwd base64-encoded in `Authorization: Basic`."""
    cluster = Cluster(name="lab", prometheus_url=listener.url, basic_auth_user="x",
                      basic_auth_password_source=source, bearer_token_source=source)
    with pytest.raises(ValidationError) as refused:          # the admin form's answer
        cluster.full_clean()
    assert problem in str(refused.value.message_dict["bearer_token_source"])
    assert problem in str(refused.value.message_dict["basic_auth_password_source"])
    Cluster.objects.bulk_create([cluster])                   # a row saved before the rule (or in SQL)
    with pytest.raises(PrometheusError, match="source .* is refused: .*" + re.escape(problem)):
        PrometheusClient.for_cluster(Cluster.objects.get(name="lab"), 5).check()
    assert listener.seen == []


def test_a_symbolic_link_out_of_the_directory_is_refused(listener, tmp_path, settings):
    settings.CLUSTER_CREDENTIALS_DIR = str(tmp_path / "secrets")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "token").symlink_to("/etc/passwd")
    cluster = Cluster(name="lab", prometheus_url=listener.url, bearer_token_source=f"file:{tmp_path}/secrets/token")
    with pytest.raises(PrometheusError, match="secrets/token is outside .*secrets \\(CLUSTER_CREDENTIALS_DIR\\)"):
        PrometheusClient.for_cluster(cluster, 5)
    assert listener.seen == []


def test_a_kubernetes_secret_mount_is_read_through_its_links(tmp_path, settings):
    """A mounted Secret is `token -> ..data/token`, `..data -> ..2026_11_26...`: links that stay inside."""
    settings.CLUSTER_CREDENTIALS_DIR = str(tmp_path)
    (tmp_path / "..2026_11_26_10_00_00.1").mkdir()
    (tmp_path / "..2026_11_26_10_00_00.1" / "token").write_text("tok-123\n")
    (tmp_path / "..data").symlink_to("..2026_11_26_10_00_00.1")
    (tmp_path / "token").symlink_to("..data/token")
    cluster = Cluster(name="lab", prometheus_url="http://x", bearer_token_source=f"file:{tmp_path}/token")
    cluster.full_clean()
    assert cluster.credentials() == ("tok-123", None)


def test_empty_settings_turn_a_kind_of_source_off(settings, monkeypatch):
    settings.CLUSTER_CREDENTIALS_DIR = ""
    settings.CLUSTER_CREDENTIALS_ENV_PREFIX = ""
    monkeypatch.setenv("PROMETHEUS_TOKEN", "tok")
    for source, problem in (("file:/var/run/secrets/prometheus/token", "file: sources are off"),
                            ("env:PROMETHEUS_TOKEN", "env: sources are off")):
        with pytest.raises(ValidationError, match=problem):
            Cluster(name="lab", prometheus_url="http://x", bearer_token_source=source).full_clean()


def test_a_changed_key_is_said_plainly(settings):
    sealed = seal("tok-123")
    settings.CREDENTIALS_KEY = "Jm8mUGVGBSKzr6sJv3n0tHqF3o4VvL5pQpQ1bQ0rW8I="
    cluster = Cluster(name="lab", prometheus_url="http://x", bearer_token=sealed)
    with pytest.raises(PrometheusError, match="cannot be decrypted with CREDENTIALS_KEY"):
        PrometheusClient.for_cluster(cluster, 5)


def test_keys_rotate_old_values_still_read(settings):
    old = "Jm8mUGVGBSKzr6sJv3n0tHqF3o4VvL5pQpQ1bQ0rW8I="
    settings.CREDENTIALS_KEY = old
    sealed = seal("tok-123")
    settings.CREDENTIALS_KEY = "c2lBCZUAw5Wgaqz8yDZfOqTGbDBqKVzEDG2nRMvB0uI=," + old
    assert unseal(sealed) == "tok-123"


def test_the_admin_never_shows_a_credential_back(client):
    cluster = make_cluster("lab", prometheus_url="http://prometheus:9090", bearer_token="tok-123",
                                     basic_auth_user="portal", basic_auth_password="pw-456")
    client.force_login(User.objects.create_superuser("root", password="root-correct-horse"))
    url = f"/admin/clusters/cluster/{cluster.pk}/change/"
    page = client.get(url).content.decode()
    sealed = raw_column(cluster, "bearer_token")
    assert "tok-123" not in page and "pw-456" not in page and sealed[len(PREFIX):len(PREFIX) + 20] not in page
    assert "a value is stored (encrypted)" in page

    form = {"name": "lab", "prometheus_url": "http://prometheus:9090", "bearer_token": "", "basic_auth_user": "portal",
            "basic_auth_password": "", "label_spelling": "auto", "team_label_key": "team", "tls_verify": "on",
            "metric_overrides": "{}", "mig_slices_overrides": "{}", "replica_labels": cluster.replica_labels,
            "time_slicing": cluster.time_slicing, "verify_workloads": "on", "label_trust": "trusted"}
    response = client.post(url, form)
    assert response.status_code == 302, [e for e in response.context["adminform"].form.errors.items()]
    cluster.refresh_from_db()
    assert unseal(cluster.bearer_token) == "tok-123" and unseal(cluster.basic_auth_password) == "pw-456"

    client.post(url, {**form, "bearer_token": "tok-789", "clear_basic_auth_password": "on"})
    cluster.refresh_from_db()
    assert unseal(cluster.bearer_token) == "tok-789" and cluster.basic_auth_password == ""



@pytest.mark.parametrize("url", ["http://prometheus:9090", "http://prometheus-k8s.monitoring.svc:9090",
                                 "https://thanos.example.com/query", "http://10.0.0.5:9090", "http://[::1]:9090",
                                 "http://localhost:9090"])
def test_service_names_are_valid_prometheus_urls(url):
    Cluster(name="ok", prometheus_url=url).full_clean()


@pytest.mark.parametrize("url", ["prometheus:9090", "ftp://prometheus", "http://", "http://bad_host:9090",
                                 "http://prometheus:99999"])
def test_other_urls_are_refused(url):
    from django.core.exceptions import ValidationError
    with pytest.raises(ValidationError, match="Prometheus|not a URL"):
        Cluster(name="bad", prometheus_url=url).full_clean()
