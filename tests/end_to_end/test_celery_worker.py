"""Beat's catch-up on a real Celery worker over the Redis on 127.0.0.1, reading a real Prometheus."""
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import Sum
from django.test import override_settings
from django.utils import timezone as djtz

from apps.accounting.models import UsageHour
from apps.ingest.models import IngestRun
from apps.ingest.pipeline import IngestBusy, cluster_lock, floor_hour, ingest
from apps.simulator.builders import build_scenario
from apps.simulator.expected import expected_figures

from tests.support.series import H, T0, dt, small_cluster_fetcher
from tests.support.prom import served
from tests.support.worker_redis import key_prefix, own_keys
from tests.support.factories import make_cluster

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/13"  # this run's keys carry their own prefix (tests/support/worker_redis.py)


def worker_env():
    name = connection.settings_dict["NAME"]
    return dict(os.environ, DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{name}", REDIS_URL=REDIS_URL,
               REDIS_KEY_PREFIX=key_prefix(),
                CELERY_WORKER_HIJACK_ROOT_LOGGER="false")


def celery(*args, env, **kw):
    return subprocess.Popen([sys.executable, "-m", "celery", "-A", "gpuportal", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


@pytest.fixture
def clean_redis():
    with own_keys(REDIS_URL) as conn:
        yield conn


@pytest.mark.celery_worker
@pytest.mark.prometheus
@pytest.mark.django_db(transaction=True)
def test_beat_catch_up_on_a_real_worker(clean_redis):
    scenario = build_scenario(name="celery", hours=2, interval_seconds=60, seed=3)
    expected = expected_figures(scenario)
    with served(scenario) as server:
        start = datetime.fromtimestamp(scenario.start, tz=timezone.utc)
        cluster = make_cluster("celery-sim", prometheus_url=server.url, ingested_until=start)
        env = worker_env()
        worker = celery("worker", "--pool=solo", "--loglevel=WARNING", "--without-gossip", "--without-mingle",
                        env=env)
        try:
            sent = subprocess.run([sys.executable, "-m", "celery", "-A", "gpuportal", "call",
                                   "apps.ingest.tasks.ingest_due_clusters"],
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
            assert sent.returncode == 0, sent.stderr
            target = floor_hour(djtz.now())
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                cluster.refresh_from_db()
                if cluster.ingested_until >= target and not IngestRun.objects.filter(status="running").exists():
                    break
                time.sleep(0.5)
            else:
                worker.terminate()
                pytest.fail(f"the worker did not catch up; log:\n{worker.communicate(timeout=10)[0][-3000:]}")
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    runs = IngestRun.objects.filter(cluster=cluster)
    assert runs.exists() and not runs.exclude(status="succeeded").exists()
    assert set(runs.values_list("trigger", flat=True)) == {"beat"}
    allocated = UsageHour.objects.filter(cluster=cluster).exclude(namespace="").aggregate(s=Sum("gpu_seconds"))["s"]
    assert allocated == pytest.approx(expected.allocated_total_gpu_seconds)


@pytest.mark.django_db
def test_one_ingest_per_cluster_at_a_time(clean_redis):
    cluster = make_cluster("locked", prometheus_url="http://127.0.0.1:9")
    with override_settings(REDIS_URL=REDIS_URL):
        with cluster_lock(cluster.pk):
            with pytest.raises(IngestBusy, match="another ingest"):
                ingest(cluster, dt(T0), dt(T0 + H), fetcher=small_cluster_fetcher())
        assert not UsageHour.objects.exists()
        ingest(cluster, dt(T0), dt(T0 + H), fetcher=small_cluster_fetcher())  # free again
    assert UsageHour.objects.exists()
    assert IngestRun.objects.filter(cluster=cluster, status="failed", error__contains="another ingest").exists()
