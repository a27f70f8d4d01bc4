"""What the Kubernetes probes and Prometheus's scrapes meet (docs/deploy.md "Probes"): `/livez`
answers without the database, `/healthz` fails when the database does, and neither they nor
`/metrics` are redirected to https even with SECURE_SSL_REDIRECT on (a kubelet takes any 3xx
as success, Prometheus would follow it to a TLS port that is not there)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db


def test_livez_answers_without_touching_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        r = client.get("/livez")
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    assert r["Cache-Control"].startswith("max-age=0")


DOWN_PROBE = """
import json, django
django.setup()
from django.test import Client
c = Client()
healthz, livez = c.get("/healthz"), c.get("/livez")
print(json.dumps([healthz.status_code, healthz.json(), livez.status_code]))
"""


def test_healthz_is_503_when_the_database_is_down_and_livez_stays_200():
    """A Postgres nobody answers for (port 9: nothing listens there): readiness fails, liveness not."""
    env = dict(os.environ, DATABASE_URL="postgres://postgres@127.0.0.1:9/gpuportal", REDIS_URL="",
               ALLOWED_HOSTS="testserver", DJANGO_SETTINGS_MODULE="gpuportal.settings")
    result = subprocess.run([sys.executable, "-c", DOWN_PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    healthz_status, body, livez_status = json.loads(result.stdout.strip().splitlines()[-1])
    assert healthz_status == 503 and body["status"] == "unhealthy"
    assert body["database"] == "error: OperationalError" and body["clusters"] == []
    assert livez_status == 200


def test_probes_and_scrapes_are_not_redirected_to_https(client, settings):
    settings.SECURE_SSL_REDIRECT = True   # read when the client's handler is built, at its first request
    for path in ("/healthz", "/livez", "/metrics"):
        r = client.get(path)
        assert r.status_code == 200, (path, r.status_code, r.get("Location"))
    login = client.get("/accounts/login/")
    assert login.status_code == 301 and login["Location"] == "https://testserver/accounts/login/"


@pytest.mark.parametrize("value, problem", [("", "''"), ("/nonexistent/prometheus-multiproc", "not a directory")])
def test_a_multiprocess_dir_that_is_not_a_directory_stops_start_up(value, problem):
    env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=value, DJANGO_SETTINGS_MODULE="gpuportal.settings")
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("django.core.exceptions.ImproperlyConfigured: PROMETHEUS_MULTIPROC_DIR=")
    assert problem in last and "create it or unset the variable" in last
