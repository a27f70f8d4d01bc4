"""/metrics under a real gunicorn with two workers: one scrape counts the requests every worker
answered, exactly, and keeps counting a worker that was killed (docs/deploy.md "/metrics").

The portal runs as deployed (gpuportal/gunicorn.conf.py, DEBUG off) against this test run's
Postgres database, with PROMETHEUS_MULTIPROC_DIR in a temporary directory.
"""
import os
import secrets
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
import requests
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.multiprocess import MultiProcessCollector

from tests.support.gunicorn import answers, start_gunicorn, stop_gunicorn
from tests.support.promtext import sample_values

ROUND = 24            # requests sent at once, 8 at a time, each on its own connection
MAX_ROUNDS = 10       # until both workers have answered some

pytestmark = pytest.mark.django_db(transaction=True)


def stale_counter_file(directory: Path):
    """What a previous gunicorn run would leave behind: 1000 /healthz requests of pid 4242."""
    directory.mkdir()
    stale = MmapedDict(str(directory / "counter_4242.db"))
    stale.write_value(mmap_key("gpuportal_http_requests", "gpuportal_http_requests_total",
                               ["route", "method", "status"], ["/healthz", "GET", "200"], "old run"), 1000.0, 0.0)
    stale.close()


METRICS_TOKEN = secrets.token_urlsafe(32)   # as deployed: /metrics answers the scraper's bearer token only


@pytest.fixture
def gunicorn(tmp_path):
    multiproc = tmp_path / "prometheus-multiproc"
    stale_counter_file(multiproc)
    proc, base = start_gunicorn(tmp_path, lambda proc, base: len(workers(proc)) >= 2 and answers(base + "/livez"),
                                within=60, METRICS_TOKEN=METRICS_TOKEN,
                                HEALTH_BIND="")   # no health listener: its process would count as a worker here
    try:
        yield base, proc, multiproc
    finally:
        stop_gunicorn(proc)


def workers(proc) -> list[int]:
    return sorted(child.pid for child in psutil.Process(proc.pid).children())


def healthz_round(base) -> None:
    def one(_):
        r = requests.get(base + "/healthz", headers={"Connection": "close"}, timeout=30)
        assert r.status_code == 200, r.text
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(ROUND)))


def healthz_counted_by_pid(multiproc: Path) -> dict[int, float]:
    """Each worker's own file, read alone: what that worker answered."""
    out = {}
    for path in multiproc.glob("counter_*.db"):
        for metric in MultiProcessCollector.merge([str(path)]):
            for sample in metric.samples:
                if sample.name == "gpuportal_http_requests_total" and sample.labels["route"] == "/healthz":
                    pid = int(path.stem.split("_")[1])
                    out[pid] = out.get(pid, 0) + sample.value
    return out


def scraped(base) -> tuple[float, float]:
    """(/healthz requests, /healthz latency observations) in one scrape of /metrics."""
    assert requests.get(base + "/metrics", timeout=30).status_code == 401
    r = requests.get(base + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=30)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/plain")
    values = sample_values(r.text)
    requests_total = sum(v for (name, labels), v in values.items()
                         if name == "gpuportal_http_requests_total" and ("route", "/healthz") in labels)
    latency_count = sum(v for (name, labels), v in values.items()
                        if name == "gpuportal_request_duration_seconds_count" and ("route", "/healthz") in labels)
    return requests_total, latency_count


@pytest.mark.postgres   # gunicorn's workers share the test database: not an in-memory one
def test_a_scrape_counts_every_workers_requests(gunicorn):
    base, proc, multiproc = gunicorn
    assert not (multiproc / "counter_4242.db").exists(), "a previous run's counts were not cleared at start"

    sent = 0
    for _ in range(MAX_ROUNDS):
        healthz_round(base)
        sent += ROUND
        if len(healthz_counted_by_pid(multiproc)) == 2:
            break
    by_pid = healthz_counted_by_pid(multiproc)
    assert set(by_pid) == set(workers(proc)), f"both workers should have answered: {by_pid}"
    assert sum(by_pid.values()) == sent

    # One scrape, answered by either worker, sees all of them: the histogram's count too.
    for _ in range(4):
        assert scraped(base) == (sent, sent)

    # A worker killed outright (as by the OOM killer) is replaced; what it counted stays counted.
    victim = workers(proc)[0]
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while victim in workers(proc) or len(workers(proc)) < 2:
        assert time.monotonic() < deadline, "gunicorn did not replace the killed worker"
        time.sleep(0.2)
    assert scraped(base) == (sent, sent)
    healthz_round(base)
    assert scraped(base) == (sent + ROUND, sent + ROUND)
