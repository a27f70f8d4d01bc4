"""A new cluster exists from its first successful ingest on, and a database outage during an
ingest is one line naming the database, with the run marked failed and nothing half-written."""
import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import Sum

from apps.accounting.models import UsageHour
from apps.clusters.models import Cluster
from apps.ingest.models import IngestRun
from apps.ingest.pipeline import IngestError, ingest

from tests.support.fake_http import free_port
from tests.support.series import H, T0, dt, small_cluster_fetcher
from tests.support.factories import make_cluster

ARGS = ["--start", "2026-10-05T10:00:00Z", "--end", "2026-10-05T12:00:00Z", "--no-progress"]


@pytest.mark.django_db
def test_a_failed_first_ingest_leaves_no_cluster():
    dead = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(CommandError, match=r"is unreachable.*not created; --create keeps it"):
        call_command("ingest", "--cluster", "typo", "--prometheus-url", dead, *ARGS)
    assert not Cluster.objects.filter(name="typo").exists()
    assert not IngestRun.objects.exists()


@pytest.mark.django_db
def test_create_keeps_the_new_cluster_and_its_failed_run():
    dead = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(CommandError, match="is unreachable") as err:
        call_command("ingest", "--cluster", "later", "--prometheus-url", dead, "--create", *ARGS)
    assert "not created" not in str(err.value)
    cluster = Cluster.objects.get(name="later")
    assert cluster.ingest_runs.get().status == "failed"


@pytest.mark.django_db
def test_a_known_cluster_stays_after_a_failed_ingest():
    make_cluster("known", prometheus_url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(CommandError, match="is unreachable"):
        call_command("ingest", "--cluster", "known", *ARGS)
    assert Cluster.objects.get(name="known").ingest_runs.get().status == "failed"


def _terminate(pid: int) -> None:
    """Kill one backend from outside, as a database restart or failover would."""
    settings = connection.settings_dict
    with psycopg.connect(host=settings["HOST"], port=settings["PORT"] or 5432, user=settings["USER"],
                         dbname=settings["NAME"], autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres   # terminates the connection's Postgres backend
def test_a_database_outage_mid_ingest_is_one_line_and_writes_nothing():
    cluster = make_cluster("lab", prometheus_url="http://127.0.0.1:9")
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    killed = []

    def progress(done, total):
        if done == 1 and not killed:      # after the first chunk is written, before the commit
            _terminate(pid)
            killed.append(pid)

    with pytest.raises(IngestError) as err:
        ingest(cluster, dt(T0), dt(T0 + 4 * H), fetcher=small_cluster_fetcher(), progress=progress,
               chunk_hours=1)
    message = str(err.value)
    assert killed and "\n" not in message
    assert message.startswith(f"the database {connection.settings_dict['NAME']} at ")
    # the database is back: the run is recorded as failed, and no hour of it was kept
    run = IngestRun.objects.get(cluster=cluster)
    assert run.status == "failed" and run.error == message and run.rows_written == 0
    assert UsageHour.objects.filter(cluster=cluster).aggregate(s=Sum("gpu_seconds"))["s"] is None
    assert Cluster.objects.get(pk=cluster.pk).ingested_until is None


@pytest.mark.slow   # runs manage.py in a child process
def test_a_database_that_is_down_is_one_line(tmp_path):
    """`manage.py ingest` with the database unreachable from the start: one line, exit 1."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:{free_port()}/nowhere"}
    out = subprocess.run([sys.executable, "manage.py", "ingest", "--cluster", "x", "--prometheus-url",
                          "http://127.0.0.1:9", *ARGS], cwd=root, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("CommandError: the database nowhere at 127.0.0.1:"), out.stderr
