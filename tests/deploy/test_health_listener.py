"""`/healthz` answers from outside the request workers (docs/deploy.md, "Probes"): gunicorn
started as production starts it (gpuportal/gunicorn.conf.py, DEBUG off, two workers) against a
seeded database; long idle reads hold every worker, and the health listener's `/healthz`
still answers in under a second while the request port's does not. Before, three concurrent
idle calls made `/healthz` take 27 s.

The long reads are real `/api/v1/idle/` calls of two users, held in Postgres behind a lock on
the hourly rows for as long as the test needs (a read that takes seconds of CPU would make
the bound depend on how loaded this machine's two cores are; a held read occupies its worker
the same way and costs no CPU)."""
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from django.db import connection, connections

from apps.teams.tokens import do_create_api_token
from gpuportal.health_listener import Checks
from tests.support.factories import make_user
from tests.support.fake_http import free_port
from tests.support.page_seed import seed

ROOT = Path(__file__).resolve().parents[2]
QUARTER = {"start": "2026-01-01", "end": "2026-03-31"}       # 89 days: under MAX_HOURLY_REPORT_DAYS


def start_gunicorn(tmp_path, health_port, database_url=None):
    (tmp_path / "static").mkdir(exist_ok=True)
    port = free_port()
    env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "prometheus-multiproc"))   # as deployed
    env.update(DATABASE_URL=database_url or
               f"postgres://postgres@127.0.0.1:5432/{connection.settings_dict['NAME']}",
               DEBUG="false", SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="127.0.0.1",
               SECURE_SSL_REDIRECT="false", STATIC_ROOT=str(tmp_path / "static"), REDIS_URL="",
               LOG_LEVEL="ERROR", HEALTH_BIND=f"127.0.0.1:{health_port}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "gpuportal/gunicorn.conf.py", "--bind", f"127.0.0.1:{port}",
         "--workers", "2", "--log-level", "warning", "gpuportal.wsgi:application"],
        cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base, health = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{health_port}"
    deadline = time.monotonic() + 90
    while not (answers(base + "/livez") and answers(health + "/livez")):
        if proc.poll() is not None:
            pytest.fail("gunicorn exited during start-up:\n" + proc.stdout.read())
        if time.monotonic() > deadline:
            stop(proc)
            pytest.fail("gunicorn or its health listener did not answer /livez within 90 s")
        time.sleep(0.3)
    return proc, base, health


def stop(proc):
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def answers(url) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def readers_waiting_on_a_lock(database: str) -> int:
    with connections["default"].cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
                    [database])
        return cur.fetchone()[0]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_healthz_answers_in_under_a_second_while_long_reads_hold_every_worker(tmp_path):
    seed()
    keys = [do_create_api_token(make_user(name, "viewer"), name="probe test", days=7, read_only=True)[1]
            for name in ("ann", "bob")]
    database = connection.settings_dict["NAME"]
    proc, base, health = start_gunicorn(tmp_path, free_port())
    locked, release = threading.Event(), threading.Event()

    def hold():
        other = connections.create_connection("default")
        try:
            with other.cursor() as cur:
                cur.execute("BEGIN")
                cur.execute("LOCK TABLE accounting_usagehour IN ACCESS EXCLUSIVE MODE")
                locked.set()
                release.wait(60)
                cur.execute("ROLLBACK")
        finally:
            other.close()

    def long_read(key):
        return requests.get(base + "/api/v1/idle/", QUARTER, headers={"Authorization": f"Token {key}"},
                            timeout=90).status_code
    holder = threading.Thread(target=hold)
    holder.start()
    pool = ThreadPoolExecutor(4)
    try:
        assert locked.wait(10)
        calls = [pool.submit(long_read, key) for key in keys * 2]     # two per user: LONG_READS_PER_USER
        deadline = time.monotonic() + 60
        while readers_waiting_on_a_lock(database) < 2:             # both workers are inside a read
            assert time.monotonic() < deadline, "the idle calls never reached the database"
            time.sleep(0.1)

        with pytest.raises(requests.Timeout):                       # the request port: every worker busy
            requests.get(base + "/healthz", timeout=1)
        for _ in range(5):
            started = time.monotonic()
            r = requests.get(health + "/healthz", timeout=5)
            took = time.monotonic() - started
            assert (r.status_code, r.json()) == (200, {"status": "ok", "database": "ok", "redis": "not configured"})
            assert took < 1.0, f"/healthz took {took:.2f} s while every worker was busy"
            assert requests.get(health + "/livez", timeout=5).status_code == 200
        assert not any(call.done() for call in calls)               # still held: the bound was measured under load
    finally:
        release.set()
        holder.join()
        statuses = [call.result() for call in calls] if "calls" in locals() else []
        pool.shutdown()
        stop(proc)
    assert statuses == [200, 200, 200, 200]
    assert not answers(health + "/livez")                           # stopped with gunicorn


def test_the_listener_says_which_dependency_is_down_within_its_budget(tmp_path, settings):
    """A database that does not answer is a 503 naming it; a check that hangs is cut at the
    budget, so the probe never waits longer than it."""
    proc, _base, health = start_gunicorn(tmp_path, free_port(), database_url=f"postgres://postgres@127.0.0.1:{free_port()}/x")
    try:
        r = requests.get(health + "/healthz", timeout=5)
        assert r.status_code == 503
        assert r.json() == {"status": "unhealthy", "database": "error: OperationalError", "redis": "not configured"}
        assert requests.get(health + "/livez", timeout=5).status_code == 200
        assert requests.get(health + "/metrics", timeout=5).status_code == 404
    finally:
        stop(proc)

    hanging = Checks(budget=0.3)
    hanging.checks = {"database": lambda: time.sleep(3) or "ok", "redis": lambda: "not configured"}
    started = time.monotonic()
    assert hanging.run() == (503, {"status": "unhealthy", "database": "error: timeout", "redis": "not configured"})
    assert time.monotonic() - started < 1.0
