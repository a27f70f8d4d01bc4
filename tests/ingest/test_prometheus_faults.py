"""A dead or lying Prometheus: a one-line reason, a non-zero exit, no stored figure changed."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import Sum

from apps.accounting.models import UsageHour
from apps.ingest.models import IngestRun
from apps.ingest.pipeline import ingest

from tests.support.fake_http import free_port, serving
from tests.support.series import H, T0, dt, small_cluster_fetcher
from tests.support.factories import make_cluster

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
ARGS = ["--start", "2026-10-05T10:00:00Z", "--end", "2026-10-05T12:00:00Z", "--no-progress"]


@pytest.fixture
def lab():
    cluster = make_cluster("lab", prometheus_url="http://127.0.0.1:9")
    ingest(cluster, dt(T0), dt(T0 + 2 * H), fetcher=small_cluster_fetcher())
    return cluster


def allocated():
    return UsageHour.objects.aggregate(s=Sum("gpu_seconds"))["s"]


CASES = [
    (503, '{"status":"error"}', "application/json", "answered HTTP 503"),
    (200, "<html><body>Grafana login</body></html>", "text/html", "is not Prometheus'"),
    (200, '{"hello": "world"}', "application/json", "is not Prometheus'"),
    (200, '{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":"oops"}]}}',
     "application/json", "not Prometheus'"),
    (400, '{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected character"}',
     "application/json", "rejected the query"),
]


@pytest.mark.parametrize("status,body,ctype,needle", CASES)
def test_lying_prometheus(lab, status, body, ctype, needle):
    before = allocated()
    with serving(status, body, ctype) as url:
        with pytest.raises(CommandError, match=needle):
            call_command("ingest", "--cluster", "lab", "--prometheus-url", url, *ARGS)
    assert allocated() == before
    run = IngestRun.objects.latest("started_at")
    assert run.status == "failed" and needle.split()[0] in run.error


def test_unreachable_prometheus(lab):
    before = allocated()
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(CommandError, match="unreachable"):
        call_command("ingest", "--cluster", "lab", "--prometheus-url", url, *ARGS)
    assert allocated() == before


def test_bad_dates_and_new_cluster_without_url(db):
    with pytest.raises(CommandError, match="--start"):
        call_command("ingest", "--cluster", "x", "--prometheus-url", "http://127.0.0.1:9",
                     "--start", "last tuesday", "--end", "2026-10-05")
    with pytest.raises(CommandError, match="--prometheus-url"):
        call_command("ingest", "--cluster", "fresh", *ARGS)


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres   # the command reaches the test database by its Postgres URL
def test_command_exit_status_and_one_line_reason():
    """The real command line: non-zero exit and exactly one line on stderr."""
    name = connection.settings_dict["NAME"]
    env = dict(os.environ, DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{name}", REDIS_URL="")
    url = f"http://127.0.0.1:{free_port()}"
    proc = subprocess.run(
        [sys.executable, "manage.py", "ingest", "--cluster", "dead", "--prometheus-url", url, *ARGS],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "unreachable" in lines[0] and url in lines[0]
