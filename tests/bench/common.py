"""What every part of `make bench` shares: where it works, its targets, the child processes it
measures, and how a figure is timed and recorded (tests/bench/__main__.py runs the parts)."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[2]


CACHE = ROOT / ".bench-cache"


RESULTS = ROOT / "bench-results.json"


TARGETS = {"ingest_ratio": 1.3, "peak_rss_mb": 300.0, "api_p95_ratio": 1.0, "page_api_ratio": 2.0,
           "close_seconds": 2.0}


def env_int(name, default):
    return int(os.environ.get(name, default))


def bench_database_url() -> str:
    url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpuportal")
    parts = urlparse(url)
    if not parts.scheme.startswith("postgres"):
        sys.exit("make bench needs Postgres: set DATABASE_URL=postgres://…")
    name = parts.path.lstrip("/") + "_bench"
    return urlunparse(parts._replace(path="/" + name))


def recreate_database(url: str) -> None:
    import psycopg

    parts = urlparse(url)
    admin = urlunparse(parts._replace(path="/postgres"))
    name = parts.path.lstrip("/")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def child_env(url: str) -> dict:
    env = dict(os.environ)
    env.update(DATABASE_URL=url, DEBUG="0", SECRET_KEY="bench-only", ALLOWED_HOSTS="testserver,localhost",
               REDIS_URL="", BILLING_TIMEZONE="UTC", DJANGO_SETTINGS_MODULE="gpuportal.settings",
               PYTHONPATH=str(ROOT))
    return env


def measured(args: list[str], env: dict) -> dict:
    """Run a child step; its JSON line plus its own peak RSS: the peak it reads of itself
    (`child.own_peak_rss_mb`), else wait4's rusage of that child, which on Linux is never below
    this process' own peak when the child was started (see there)."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.bench.child", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Both pipes drained at once: a child that logs more than a pipe holds (64 KiB) to stderr
    # while the parent reads stdout to its end would wait on the parent for ever.
    errs: list[bytes] = []
    drain = threading.Thread(target=lambda: errs.append(proc.stderr.read()), daemon=True)
    drain.start()
    out = proc.stdout.read()
    drain.join()
    err = errs[0]
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"bench step {' '.join(args[:1])} failed:\n{err.decode()[-3000:]}")
    result = json.loads(out.decode().strip().splitlines()[-1])
    own = result.pop("own_peak_rss_mb", None)
    result["peak_rss_mb"] = own if own is not None else round(usage.ru_maxrss / 1024.0, 1)   # Linux: KiB
    return result


def ratio(value, baseline):
    return round(value / baseline, 3) if baseline else None


def figure(value, baseline, unit, target=None, note=""):
    out = {"value": value, "baseline": baseline, "ratio": ratio(value, baseline), "unit": unit}
    if target is not None:
        out["target"] = target
    if note:
        out["note"] = note
    return out


# ------------------------------------------------------------------ ingest


def percentile(values, q):
    s = sorted(values)
    k = (len(s) - 1) * q
    f = int(k)
    c = min(f + 1, len(s) - 1)
    return s[f] + (s[c] - s[f]) * (k - f)


def timed(fn, repeats):
    fn()  # warm: first-request imports and connection setup are not the steady state
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000.0)
    return {"p50": round(percentile(samples, 0.5), 1), "p95": round(percentile(samples, 0.95), 1),
            "max": round(max(samples), 1)}


def alternated(fn, base, repeats):
    """`timed` of `fn` and of `base`, called in turn (fn, base, fn, base, …): a ratio between the
    two is measured under the same load on a shared machine, not in two stretches of it."""
    fn(), base()
    took, based = [], []
    for _ in range(repeats):
        for call, samples in ((fn, took), (base, based)):
            t = time.perf_counter()
            call()
            samples.append((time.perf_counter() - t) * 1000.0)
    return [{"p50": round(percentile(v, 0.5), 1), "p95": round(percentile(v, 0.95), 1), "max": round(max(v), 1)}
            for v in (took, based)]


def fleet_size(fleet) -> int:
    return sum(len(d) for d in fleet.devices)


def machine() -> dict:
    try:
        import psutil

        mem = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        mem = None
    return {"cpus": os.cpu_count(), "memory_gib": mem, "python": platform.python_version(),
            "platform": platform.platform()}
