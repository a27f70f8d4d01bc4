"""A bad night: a slow Prometheus, a killed worker, a dropped database connection, NaN samples.
Each ends with a clear error, an IngestRun saying what happened, and figures either unchanged
or complete — never half-written."""
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest
from django.db import connection
from django.db.models import Sum
from django.test import override_settings

from apps.accounting.models import UsageHour
from apps.clusters.models import Cluster
from apps.ingest.models import IngestRun
from apps.ingest.pipeline import IngestError, ingest
from apps.simulator.builders import build_scenario
from apps.simulator.expected import expected_figures
from apps.simulator.promserver import PrometheusServer, backfill

from tests.support.fake_http import slow_proxy
from tests.support.prom import served
from tests.support.worker_redis import key_prefix, own_keys
from tests.support.factories import make_cluster

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/12"
pytestmark = [pytest.mark.prometheus]


def iso(ts):
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def dt(ts):
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def allocated(cluster):
    return UsageHour.objects.filter(cluster=cluster).exclude(namespace="").aggregate(s=Sum("gpu_seconds"))["s"]


@pytest.fixture(scope="module")
def small_history():
    scenario = build_scenario(name="faults", hours=4, interval_seconds=60, seed=11)
    with served(scenario) as server:
        yield scenario, server


@pytest.fixture
def clean_redis():
    with own_keys(REDIS_URL) as conn:
        yield conn


def worker_env(**extra):
    name = connection.settings_dict["NAME"]
    env = dict(os.environ, DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{name}", REDIS_URL=REDIS_URL,
               REDIS_KEY_PREFIX=key_prefix(),
               INGEST_CHUNK_HOURS="1", INGEST_RETRY_BACKOFF_SECONDS="1",
               # a chunk's 14 queries take ~2 s through the slow proxy: the lock outlives a chunk,
               # and the visibility timeout outlives the whole task (no double delivery)
               CELERY_VISIBILITY_TIMEOUT="15", INGEST_LOCK_SECONDS="6", CELERY_UNACKED_RESTORE_SECONDS="2")
    env.update(extra)
    return env


def start_worker(env, pool="solo"):
    # prefork runs kombu's periodic restore of unacknowledged messages (solo does not)
    return subprocess.Popen([sys.executable, "-m", "celery", "-A", "gpuportal", "worker", f"--pool={pool}",
                             "--concurrency=1",
                             "--loglevel=WARNING", "--without-gossip", "--without-mingle"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def send_ingest(env, cluster, start, end):
    args = f'[{cluster.pk}, "{iso(start)}", "{iso(end)}", "beat"]'
    sent = subprocess.run([sys.executable, "-m", "celery", "-A", "gpuportal", "call",
                           "apps.ingest.tasks.ingest_cluster_window", "--args", args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert sent.returncode == 0, sent.stderr


def wait_for(predicate, seconds, what, worker=None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    log = ""
    if worker is not None:
        worker.kill()
        log = worker.communicate(timeout=10)[0][-3000:]
    runs = list(IngestRun.objects.values_list("cluster__name", "status", "chunks_done", "error"))
    pytest.fail(f"timed out waiting for {what}\nruns: {runs}\n{log}")


@pytest.mark.django_db
def test_slow_prometheus_times_out_cleanly(small_history):
    scenario, server = small_history
    cluster = make_cluster("slow", prometheus_url=server.url)
    ingest(cluster, dt(scenario.start), dt(scenario.end))
    before = allocated(cluster)
    with slow_proxy(server.url, delay_seconds=2.0) as url:
        Cluster.objects.filter(pk=cluster.pk).update(prometheus_url=url)
        cluster.refresh_from_db()
        with override_settings(PROMETHEUS_TIMEOUT_SECONDS=0.5), pytest.raises(IngestError, match="timed out"):
            ingest(cluster, dt(scenario.start), dt(scenario.end))
    assert allocated(cluster) == before
    assert IngestRun.objects.filter(cluster=cluster, status="failed", error__contains="timed out").exists()


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_worker_killed_mid_task_is_redelivered_and_completes(small_history, clean_redis):
    scenario, server = small_history
    expected = expected_figures(scenario)
    with slow_proxy(server.url, delay_seconds=0.15) as url:
        cluster = make_cluster("killed", prometheus_url=url)
        env = worker_env()
        worker = start_worker(env)
        send_ingest(env, cluster, scenario.start, scenario.end)
        wait_for(lambda: IngestRun.objects.filter(cluster=cluster, status="running").exists(), 60,
                 "the ingest to start", worker)
        time.sleep(2.5)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
        assert not UsageHour.objects.filter(cluster=cluster).exists()  # nothing half-written
        worker = start_worker(env, pool="prefork")
        try:
            wait_for(lambda: IngestRun.objects.filter(cluster=cluster, status="succeeded").exists(), 120,
                     "the redelivered task to succeed", worker)
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    assert allocated(cluster) == pytest.approx(expected.allocated_total_gpu_seconds)
    dead = IngestRun.objects.filter(cluster=cluster, status="failed")
    assert dead.exists() and "interrupted" in dead.first().error


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_database_connection_dropped_mid_ingest_rolls_back_and_retries(small_history, clean_redis):
    scenario, server = small_history
    expected = expected_figures(scenario)
    name = connection.settings_dict["NAME"]
    with slow_proxy(server.url, delay_seconds=0.3) as url:
        cluster = make_cluster("dropped", prometheus_url=url)
        env = worker_env(CELERY_VISIBILITY_TIMEOUT="600", INGEST_LOCK_SECONDS="600")
        worker = start_worker(env)
        try:
            send_ingest(env, cluster, scenario.start, scenario.end)
            wait_for(lambda: IngestRun.objects.filter(cluster=cluster, status="running").exists(), 60,
                     "the ingest to start", worker)
            time.sleep(1.0)
            with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{name}", autocommit=True) as admin:
                killed = admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = %s AND pid <> pg_backend_pid() AND application_name NOT LIKE 'pytest%%' "
                    "AND backend_type = 'client backend' AND pid NOT IN (SELECT pg_backend_pid())",
                    (name,),
                ).fetchone()[0]
            connection.close()  # ours may have been among them; Django reconnects
            assert killed >= 1
            wait_for(lambda: IngestRun.objects.filter(cluster=cluster, status="succeeded").exists(), 120,
                     "the retried task to succeed", worker)
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    assert allocated(cluster) == pytest.approx(expected.allocated_total_gpu_seconds)
    assert IngestRun.objects.filter(cluster=cluster).exclude(status="succeeded").exists()


@pytest.mark.django_db
def test_nan_and_inf_samples_from_a_real_prometheus(tmp_path):
    """NaN and ±Inf travel through Prometheus' JSON as strings; they never become used GPU-time."""
    t0 = (int(time.time()) // 3600 - 30) * 3600
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    labels = 'gpu="0",UUID="GPU-nan",Hostname="n1",modelName="NVIDIA H100 80GB HBM3",namespace="ml",pod="p"'
    values = ["50", "NaN", "+Inf", "-Inf", "50", "0"]
    for i, v in enumerate(values):
        lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {v} {t0 + 60 * i}")
    lines.append("# EOF")
    om = tmp_path / "nan.om"
    om.write_text("\n".join(lines) + "\n")
    backfill(om, tmp_path / "tsdb")
    with PrometheusServer(tmp_path / "tsdb") as server:
        cluster = make_cluster("nan", prometheus_url=server.url)
        run = ingest(cluster, dt(t0), dt(t0 + 3600))
    [row] = UsageHour.objects.filter(cluster=cluster)
    assert row.gpu_seconds == pytest.approx(6 * 60.0)          # held all six samples
    assert row.unknown_util_samples == 3
    assert row.used_gpu_seconds == pytest.approx(60 * 0.5 * 2)  # the two 50 % samples
    assert row.idle_gpu_seconds == pytest.approx(60.0)          # the 0 % sample
    assert any("NaN" in w for w in run.warnings)
