"""`make load`: gunicorn (4 workers, DEBUG off) on Postgres with a month of a 200-GPU cluster,
then 50 concurrent API clients for 60 s on 127.0.0.1. Prints p50 / p95 / requests per second,
writes var/load.json, exits 1 on any error. Bounded: stops itself after LOAD_SECONDS.

Environment: DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gpuportal_load; created and
seeded when empty), LOAD_SECONDS (60), LOAD_CLIENTS (50), LOAD_WORKERS (4).
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
GPUS, DAYS, CLUSTER = 200, 30, "load-200"
TEAMS = ["vision", "nlp", "speech", "recsys", "search", "robotics", "ads", "research"]
REQUEST_TIMEOUT_SECONDS = 120


def ensure_database():
    import psycopg
    from urllib.parse import urlsplit
    url = urlsplit(os.environ["DATABASE_URL"])
    name = url.path.lstrip("/")
    admin_url = url._replace(path="/postgres").geturl()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def seed():
    """A month of one 200-GPU cluster: 25 nodes × 8 GPUs (160 H100, 40 A100), 24 namespaces of
    8 teams, ~85 % allocated, utilization following the hour of day. Deterministic."""
    import math
    from decimal import Decimal

    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    from apps.accounting.models import QuotaHour, Rate, UsageHour
    from apps.clusters.models import Cluster, Device
    from apps.teams.models import Namespace, NamespaceAssignment, Team

    call_command("migrate", verbosity=0)
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    if not Cluster.objects.filter(name=CLUSTER).exists():
        t0 = time.monotonic()
        cluster = Cluster.objects.create(name=CLUSTER, prometheus_url="http://127.0.0.1:9/", ingested_until=now)
        namespaces = []
        for i in range(24):
            team = Team.objects.get_or_create(name=TEAMS[i % len(TEAMS)])[0]
            ns = Namespace.objects.create(cluster=cluster, name=f"{team.name}-ns{i // len(TEAMS)}")
            NamespaceAssignment.objects.create(namespace=ns, team=team, effective_from=date(2020, 1, 1))
            namespaces.append(ns.name)
        devices = []
        for g in range(GPUS):
            model = "NVIDIA H100 80GB HBM3" if g < 160 else "NVIDIA A100-SXM4-80GB"
            devices.append(Device.objects.create(cluster=cluster, uuid=f"GPU-load-{g}", host=f"node-{g // 8:02d}",
                                                 gpu_index=str(g % 8), model_name=model,
                                                 first_seen=now - timedelta(days=DAYS), last_seen=now))
        start = now - timedelta(days=DAYS)
        batch = []
        for h in range(DAYS * 24):
            hour = start + timedelta(hours=h)
            for g, dev in enumerate(devices):
                slot = (g * 7 + h // 24) % 100
                ns = namespaces[g % len(namespaces)] if slot < 85 else ""
                util = max(0.0, min(1.0, 0.25 + (g % 10) / 15 + 0.2 * math.sin((hour.hour + g) / 4))) if ns else 0.0
                idle = 3600.0 if ns and util < 0.05 else 0.0
                batch.append(UsageHour(
                    cluster=cluster, device=dev, namespace=ns, pod=f"{ns}-job-{(g + h // 12) % 40}" if ns else "",
                    hour_start=hour, node=dev.host, gpu_model=dev.model_name, gpu_fraction=1.0, sample_count=120,
                    gpu_seconds=3600.0, used_gpu_seconds=3600.0 * util, idle_gpu_seconds=idle,
                    idle_prefix_seconds=idle, idle_suffix_seconds=idle, idle_max_run_seconds=idle,
                    idle_whole_hour=idle > 0, energy_joules=3600.0 * (90 + 500 * util)))
            if len(batch) >= 10000:
                UsageHour.objects.bulk_create(batch)
                batch = []
        UsageHour.objects.bulk_create(batch)
        QuotaHour.objects.bulk_create([
            QuotaHour(cluster=cluster, namespace=ns, resource="requests.nvidia.com/gpu", hour_start=start + timedelta(hours=h),
                      hard=12, used_max=8 + (h + i) % 4, seconds_at_hard=0)
            for h in range(DAYS * 24) for i, ns in enumerate(namespaces)], batch_size=10000)
        for model, price in (("NVIDIA H100 80GB HBM3", "2.50"), ("NVIDIA A100-SXM4-80GB", "1.10")):
            Rate.objects.create(gpu_model=model, hourly_rate=Decimal(price), currency="USD", effective_from=date(2020, 1, 1))
        print(f"seeded {UsageHour.objects.count()} usage hours in {time.monotonic() - t0:.0f} s", flush=True)
    tokens = {}
    for name, role, team in (("load-admin", "admin", None), ("load-finance", "finance", None),
                             ("load-viewer", "viewer", None), ("load-lead-vision", "team_lead", "vision"),
                             ("load-lead-nlp", "team_lead", "nlp")):
        user, _ = User.objects.get_or_create(username=name)
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        if team:
            Team.objects.get(name=team).members.add(user)
        tokens[name] = Token.objects.get_or_create(user=user)[0].key
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
        [sys.executable, "-m", "gunicorn", "gpuportal.wsgi", "--workers", str(WORKERS), "--bind", f"127.0.0.1:{port}",
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
    period = (date.today().replace(day=1) - timedelta(days=1)).strftime("%Y-%m")
    urls = ["/api/v1/usage/?group_by=team", "/api/v1/usage/?group_by=namespace", "/api/v1/usage/?group_by=cluster",
            "/api/v1/usage/?group_by=gpu_model", "/api/v1/idle/", f"/api/v1/chargeback/?period={period}",
            f"/api/v1/chargeback/?period={period}&group_by=namespace", "/api/v1/quota-recommendations/"]
    out = []
    for user, token in tokens.items():
        for url in urls:
            if user == "load-viewer" and "chargeback" in url:
                continue   # viewers see no money: a 403 by design, not a load figure
            out.append((url, token))
    return out


def run_clients(base, plan):
    import requests
    stop_at = time.monotonic() + SECONDS
    lock = threading.Lock()
    latencies, statuses, errors, by_url = [], Counter(), [], {}

    def client(n):
        session = requests.Session()
        i = n
        while time.monotonic() < stop_at:
            url, token = plan[i % len(plan)]
            i += 7
            t = time.monotonic()
            try:
                r = session.get(base + url, headers={"Authorization": f"Token {token}"},
                                timeout=REQUEST_TIMEOUT_SECONDS)
                code = r.status_code
            except requests.RequestException as exc:
                code = type(exc).__name__
            elapsed = time.monotonic() - t
            with lock:
                statuses[code] += 1
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
    return time.monotonic() - t0, latencies, statuses, errors, by_url


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
        print(f"gunicorn ({WORKERS} workers) on {base}; {CLIENTS} clients for {SECONDS} s ...", flush=True)
        wall, latencies, statuses, errors, by_url = run_clients(base, targets(tokens))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(static_root, ignore_errors=True)
    total = sum(statuses.values())
    q = statistics.quantiles(latencies, n=100) if len(latencies) >= 2 else [float("nan")] * 99
    result = {"clients": CLIENTS, "workers": WORKERS, "seconds": round(wall, 1), "requests": total,
              "errors": len(errors), "statuses": {str(k): v for k, v in statuses.items()},
              "requests_per_second": round(total / wall, 1), "p50_ms": round(q[49] * 1000),
              "p95_ms": round(q[94] * 1000), "p99_ms": round(q[98] * 1000), "cpu_cores": os.cpu_count(),
              "median_ms_by_url": {u: round(statistics.median(v) * 1000) for u, v in sorted(by_url.items())}}
    (ROOT / "var").mkdir(exist_ok=True)
    (ROOT / "var" / "load.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    if errors:
        print("errors (first 10):", *errors[:10], sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
