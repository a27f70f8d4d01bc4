"""`/healthz` answers from outside the request workers (docs/deploy.md, "Probes"): gunicorn
started as production starts it (gpuportal/gunicorn.conf.py, DEBUG off, two workers) against a
seeded database; long idle reads hold every worker, and the health listener's `/healthz`
still answers in under a second while the request port's does not. Before, three concurrent
idle calls made `/healthz` take 27 s.

The long reads are real `/api/v1/idle/` calls of two users, held in Postgres behind a lock on
the hourly rows for as long as the test needs (a read that takes seconds of CPU would make
the bound depend on how loaded this machine's two cores are; a held read occupies its worker
the same way and costs no CPU)."""
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.db import connection, connections

from apps.teams.tokens import do_create_api_token
from gpuportal.health_listener import Checks
from tests.support.factories import make_user
from tests.support.fake_http import free_port
from tests.support.gunicorn import answers, start_gunicorn, stop_gunicorn
from tests.support.page_seed import seed
from tests.support.db_locks import table_locked

QUARTER = {"start": "2026-01-01", "end": "2026-03-31"}       # 89 days: under MAX_HOURLY_REPORT_DAYS


def start(tmp_path, health_port, database_url=None):
    """gunicorn with its health listener on `health_port`: (process, request URL, listener URL)."""
    health = f"http://127.0.0.1:{health_port}"
    extra = {"DATABASE_URL": database_url} if database_url else {}
    proc, base = start_gunicorn(tmp_path, lambda _proc, base: answers(base + "/livez") and answers(health + "/livez"),
                                HEALTH_BIND=f"127.0.0.1:{health_port}", **extra)
    return proc, base, health


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
    proc, base, health = start(tmp_path, free_port())
    def long_read(key):
        return requests.get(base + "/api/v1/idle/", QUARTER, headers={"Authorization": f"Token {key}"},
                            timeout=90).status_code
    pool = ThreadPoolExecutor(4)
    calls = []
    try:
        with table_locked("accounting_usagehour"):
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
        statuses = [call.result() for call in calls]
    finally:
        pool.shutdown()
        stop_gunicorn(proc)
    assert statuses == [200, 200, 200, 200]
    assert not answers(health + "/livez")                           # stopped with gunicorn


def test_the_listener_says_which_dependency_is_down_within_its_budget(tmp_path, settings):
    """A database that does not answer is a 503 naming it; a check that hangs is cut at the
    budget, so the probe never waits longer than it."""
    proc, _base, health = start(tmp_path, free_port(), database_url=f"postgres://postgres@127.0.0.1:{free_port()}/x")
    try:
        r = requests.get(health + "/healthz", timeout=5)
        assert r.status_code == 503
        assert r.json() == {"status": "unhealthy", "database": "error: OperationalError", "redis": "not configured"}
        assert requests.get(health + "/livez", timeout=5).status_code == 200
        assert requests.get(health + "/metrics", timeout=5).status_code == 404
    finally:
        stop_gunicorn(proc)

    hanging = Checks(budget=0.3)
    hanging.checks = {"database": lambda: time.sleep(3) or "ok", "redis": lambda: "not configured"}
    started = time.monotonic()
    assert hanging.run() == (503, {"status": "unhealthy", "database": "error: timeout", "redis": "not configured"})
    assert time.monotonic() - started < 1.0
