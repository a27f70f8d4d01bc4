"""`make load`: gunicorn (DEBUG off) on Postgres with the bench's month of a large fleet
(10,000 GPUs, 5,000 namespaces, 250 teams: apps/simulator/benchseed.py), then 50 concurrent API clients
for 60 s on 127.0.0.1, all asking the month endpoints (usage and chargeback, by team and by
namespace, as finance, an admin and two team leads). Prints requests per second, p50 / p95 / p99
and the megabytes received (answers are read whole, gzip-compressed as sent, not decoded),
writes var/load.json, exits 1 on any error. Bounded: stops itself after LOAD_SECONDS.

Environment: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gpuportal_load; created and
seeded when empty), LOAD_SECONDS (60), LOAD_CLIENTS (50), LOAD_WORKERS (4), LOAD_THREADS (1: gthread
workers when more), LOAD_GPUS (10000), LOAD_NAMESPACES (5000), LOAD_TEAMS (250). docs/performance.md
says how the worker and thread counts were chosen.
"""
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpuportal_load")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuportal.settings")
os.environ["REDIS_URL"] = ""

SECONDS = int(os.environ.get("LOAD_SECONDS", "60"))
CLIENTS = int(os.environ.get("LOAD_CLIENTS", "50"))
WORKERS = int(os.environ.get("LOAD_WORKERS", "4"))
THREADS = int(os.environ.get("LOAD_THREADS", "1"))
GPUS = int(os.environ.get("LOAD_GPUS", "10000"))
NAMESPACES = int(os.environ.get("LOAD_NAMESPACES", "5000"))
TEAMS = int(os.environ.get("LOAD_TEAMS", "250"))
REQUEST_TIMEOUT_SECONDS = 120
LOAD_TOKEN_NAME = "make load"


def ensure_database():
    import psycopg
    from urllib.parse import urlsplit
    url = urlsplit(os.environ["DATABASE_URL"])
    name = url.path.lstrip("/")
    admin_url = url._replace(path="/postgres").geturl()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def month() -> tuple[date, date]:
    """The last whole calendar month: the one finance asks about."""
    first = (date.today().replace(day=1) - timedelta(days=1)).replace(day=1)
    end = (first + timedelta(days=32)).replace(day=1)
    return first, end


def seed():
    """The bench's fleet for last month, seeded once per database (a second run reuses it, so
    its figures compare); the example rate card; four users with personal API tokens."""
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from apps.teams.models import ApiToken
    from apps.teams.tokens import EXPIRY_DAYS, do_create_api_token

    from apps.accounting.models import Rate, UsageDay
    from apps.teams.models import Namespace, Team
    from apps.simulator.benchseed import seed_month

    call_command("migrate", verbosity=0)
    first, end = month()
    if not UsageDay.objects.filter(day__gte=first, day__lt=end).exists():
        t0 = time.monotonic()
        seeded = seed_month(first, (end - first).days, GPUS, NAMESPACES, TEAMS)
        print(f"seeded {seeded['usage_day_rows']:,} daily rollup rows ({GPUS:,} GPUs, {NAMESPACES:,} namespaces, "
              f"{TEAMS} teams) in {time.monotonic() - t0:.0f} s", flush=True)
    if not Rate.objects.exists():
        call_command("import_rates", str(ROOT / "apps/accounting/fixtures/rates.example.csv"), verbosity=0)
    leads = sorted(set(Namespace.objects.exclude(label_team="").values_list("label_team", flat=True)))[:2]
    tokens = {}
    for name, role, team in (("load-admin", "admin", None), ("load-finance", "finance", None),
                             *((f"load-lead-{t}", "team_lead", t) for t in leads)):
        user, _ = User.objects.get_or_create(username=name)
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        if team:
            Team.objects.get_or_create(name=team)[0].members.add(user)
        # A personal read-only token, as API consumers use (the one key shown once); this run's
        # replaces the previous run's.
        for old in ApiToken.objects.filter(token__user=user, name=LOAD_TOKEN_NAME):
            old.token.delete()
        tokens[name] = do_create_api_token(user, name=LOAD_TOKEN_NAME, days=min(EXPIRY_DAYS), read_only=True)[1]
    return tokens


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(port, static_root):
    """As deployed: DEBUG off, collectstatic first (the manifest storage needs it), plain HTTP on
    127.0.0.1 (no TLS proxy here, so no SSL redirect), the throttle set out of the way."""
    env = dict(os.environ, DEBUG="false", SECRET_KEY=secrets.token_urlsafe(64), ALLOWED_HOSTS="127.0.0.1",
               SECURE_SSL_REDIRECT="false", API_THROTTLE_RATE="1000000/min", CONN_MAX_AGE="60", LOG_LEVEL="ERROR",
               STATIC_ROOT=static_root)
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT, env=env,
                   check=True)
    return subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "gpuportal.wsgi", "--workers", str(WORKERS), "--threads", str(THREADS),
         "--bind", f"127.0.0.1:{port}",
         "--timeout", str(REQUEST_TIMEOUT_SECONDS), "--log-level", "warning"],
        cwd=ROOT, env=env, start_new_session=True)


def wait_ready(base, proc, limit_seconds=60):
    import requests
    deadline = time.monotonic() + limit_seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("gunicorn exited during start-up")
        try:
            if requests.get(base + "/accounts/login/", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.5)
    raise SystemExit("gunicorn did not answer within 60 s")


def targets(tokens):
    """The month endpoints (docs/performance.md, "make load"), each as every user."""
    first, end = month()
    period = first.strftime("%Y-%m")
    urls = [f"/api/v1/usage/?start={first}&end={end}&group_by=team",
            f"/api/v1/usage/?start={first}&end={end}&group_by=namespace",
            f"/api/v1/chargeback/?period={period}&group_by=team",
            f"/api/v1/chargeback/?period={period}&group_by=namespace"]
    return [(url, token) for token in tokens.values() for url in urls]


def run_clients(base, plan):
    import requests
    stop_at = time.monotonic() + SECONDS
    lock = threading.Lock()
    latencies, statuses, errors, by_url, sizes = [], Counter(), [], {}, []

    def client(n):
        session = requests.Session()
        i = n
        while time.monotonic() < stop_at:
            url, token = plan[i % len(plan)]
            i += 7
            t = time.monotonic()
            received = 0
            try:
                # Every byte of the answer is read, as sent (gzip when the server compressed it),
                # and not decompressed or parsed: like wrk, the clients measure the server, and
                # 50 Python clients inflating megabytes would take the cores they share with it.
                with session.get(base + url, headers={"Authorization": f"Token {token}", "Accept-Encoding": "gzip"},
                                 timeout=REQUEST_TIMEOUT_SECONDS, stream=True) as r:
                    for chunk in r.raw.stream(1 << 16, decode_content=False):
                        received += len(chunk)
                    code = r.status_code
            except requests.RequestException as exc:
                code = type(exc).__name__
            elapsed = time.monotonic() - t
            with lock:
                statuses[code] += 1
                sizes.append(received)
                if code == 200:
                    latencies.append(elapsed)
                    by_url.setdefault(url, []).append(elapsed)
                else:
                    errors.append(f"{url}: {code}")

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(CLIENTS)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(SECONDS + REQUEST_TIMEOUT_SECONDS + 10)
    return time.monotonic() - t0, latencies, statuses, errors, by_url, sizes


def main():
    ensure_database()
    import django
    django.setup()
    tokens = seed()
    from django.db import connections
    connections.close_all()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    static_root = tempfile.mkdtemp(prefix="gpuportal-load-static-")
    proc = start_gunicorn(port, static_root)
    try:
        wait_ready(base, proc)
        print(f"gunicorn ({WORKERS} workers × {THREADS} threads) on {base}; {CLIENTS} clients for {SECONDS} s ...", flush=True)
        wall, latencies, statuses, errors, by_url, sizes = run_clients(base, targets(tokens))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(static_root, ignore_errors=True)
    total = sum(statuses.values())
    q = statistics.quantiles(latencies, n=100) if len(latencies) >= 2 else [float("nan")] * 99
    result = {"clients": CLIENTS, "workers": WORKERS, "threads": THREADS, "gpus": GPUS, "namespaces": NAMESPACES, "seconds": round(wall, 1), "requests": total,
              "errors": len(errors), "statuses": {str(k): v for k, v in statuses.items()},
              "requests_per_second": round(total / wall, 1), "p50_ms": round(q[49] * 1000),
              "p95_ms": round(q[94] * 1000), "p99_ms": round(q[98] * 1000), "cpu_cores": os.cpu_count(),
              "megabytes_received": round(sum(sizes) / 1e6, 1),
              "median_ms_by_url": {u: round(statistics.median(v) * 1000) for u, v in sorted(by_url.items())}}
    result["targets"] = {"requests_per_second >= 50": result["requests_per_second"] >= 50,
                         "p95_ms < 500": result["p95_ms"] < 500, "errors == 0": not errors}
    (ROOT / "var").mkdir(exist_ok=True)
    (ROOT / "var" / "load.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    if errors:
        print("errors (first 10):", *errors[:10], sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
