"""The portal's own health: `/healthz` for load balancers, `/metrics` for Prometheus.

Both are open (no login) and carry no secrets: cluster names, ages, counts.

`/metrics` computes its ingest figures from the database at scrape time (IngestRun rows and
watermarks), so every gunicorn worker answers the same whatever it served. Request latency is
the one figure kept in process memory (RequestLatencyMiddleware): with several gunicorn
workers a scrape sees only the worker that answered it (docs/performance.md explains).
"""
from __future__ import annotations

import bisect
import threading
import time

from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, Q, Sum
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

LATENCY_BUCKETS_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


# ------------------------------------------------------------------ figures (pure reads)

def cluster_ingest_state(now=None) -> list[dict]:
    from apps.clusters.models import Cluster

    now = now or timezone.now()
    rows = (Cluster.objects.order_by("name")
            .annotate(last_ok=Max("ingest_runs__finished_at", filter=Q(ingest_runs__status="succeeded")),
                      rows=Sum("ingest_runs__rows_written", filter=Q(ingest_runs__status="succeeded")),
                      ok=Count("ingest_runs", filter=Q(ingest_runs__status="succeeded")),
                      failed=Count("ingest_runs", filter=Q(ingest_runs__status="failed")))
            .values("name", "ingested_until", "last_ok", "rows", "ok", "failed"))
    out = []
    for r in rows:
        age = (now - r["last_ok"]).total_seconds() if r["last_ok"] else None
        lag = (now - r["ingested_until"]).total_seconds() if r["ingested_until"] else None
        out.append({"cluster": r["name"], "last_success_age_seconds": None if age is None else round(age, 1),
                    "ingest_lag_seconds": None if lag is None else round(lag, 1),
                    "ingested_until": r["ingested_until"].isoformat() if r["ingested_until"] else None,
                    "rows_written": r["rows"] or 0, "runs_succeeded": r["ok"], "runs_failed": r["failed"],
                    "stale": lag is None or lag > settings.STALE_INGEST_HOURS * 3600})
    return out


def check_database() -> str:
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT 1")
            cur.fetchone()
        return "ok"
    except Exception as exc:  # noqa: BLE001 - any failure is the answer
        return f"error: {type(exc).__name__}"


def check_redis() -> str:
    if not settings.REDIS_URL:
        return "not configured"
    try:
        import redis

        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2).ping()
        return "ok"
    except Exception as exc:  # noqa: BLE001
        return f"error: {type(exc).__name__}"


# ------------------------------------------------------------------ views

@never_cache
@require_GET
def healthz(request):
    """200 when the database (and Redis, if configured) answer; 503 otherwise.

    Stale ingest is reported per cluster (and as `ingest: "stale"`) but only fails the check
    with `?strict=1`: a web worker that cannot ingest is still worth routing traffic to.
    """
    database, redis_state = check_database(), check_redis()
    clusters = cluster_ingest_state() if database == "ok" else []
    ingest = "stale" if any(c["stale"] for c in clusters) else "ok"
    healthy = database == "ok" and redis_state in ("ok", "not configured")
    if request.GET.get("strict") in ("1", "true") and ingest != "ok":
        healthy = False
    body = {"status": "ok" if healthy else "unhealthy", "database": database, "redis": redis_state,
            "ingest": ingest,
            "clusters": [{k: c[k] for k in ("cluster", "last_success_age_seconds", "ingest_lag_seconds", "stale")}
                         for c in clusters]}
    return JsonResponse(body, status=200 if healthy else 503)


def _label(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


@never_cache
@require_GET
def metrics(request):
    lines: list[str] = []

    def family(name, kind, help_text):
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")

    database = check_database()
    family("gpuportal_up", "gauge", "1 when the portal's database answers")
    lines.append(f"gpuportal_up {1 if database == 'ok' else 0}")
    clusters = cluster_ingest_state() if database == "ok" else []
    series = (
        ("gpuportal_ingest_lag_seconds", "gauge", "now minus the cluster's ingest watermark",
         "ingest_lag_seconds"),
        ("gpuportal_ingest_last_success_age_seconds", "gauge", "seconds since the last succeeded ingest ended",
         "last_success_age_seconds"),
        ("gpuportal_ingest_rows_written_total", "counter", "rollup rows written by succeeded ingest runs",
         "rows_written"),
        ("gpuportal_ingest_runs_succeeded_total", "counter", "succeeded ingest runs (IngestRun rows)",
         "runs_succeeded"),
        ("gpuportal_ingest_task_failures_total", "counter", "failed ingest runs, tasks and commands alike",
         "runs_failed"),
    )
    for name, kind, help_text, key in series:
        family(name, kind, help_text)
        for c in clusters:
            if c[key] is not None:
                lines.append(f'{name}{{cluster="{_label(c["cluster"])}"}} {c[key]}')
    LATENCY.render(lines)
    return HttpResponse("\n".join(lines) + "\n", content_type="text/plain; version=0.0.4; charset=utf-8")


# ------------------------------------------------------------------ request latency (per process)

class _Histogram:
    def __init__(self, buckets):
        self.buckets = buckets
        self.lock = threading.Lock()
        self.counts: dict[tuple[str, str], list] = {}

    def observe(self, route: str, method: str, seconds: float) -> None:
        i = bisect.bisect_left(self.buckets, seconds)
        with self.lock:
            entry = self.counts.setdefault((route, method), [[0] * (len(self.buckets) + 1), 0.0, 0])
            entry[0][i] += 1
            entry[1] += seconds
            entry[2] += 1

    def render(self, lines: list[str]) -> None:
        name = "gpuportal_request_duration_seconds"
        lines.append(f"# HELP {name} time to answer HTTP requests, by route (this worker process only)")
        lines.append(f"# TYPE {name} histogram")
        with self.lock:
            snapshot = {k: ([*v[0]], v[1], v[2]) for k, v in self.counts.items()}
        for (route, method), (counts, total, n) in sorted(snapshot.items()):
            labels = f'route="{_label(route)}",method="{_label(method)}"'
            running = 0
            for bound, c in zip(self.buckets, counts):
                running += c
                lines.append(f'{name}_bucket{{{labels},le="{bound}"}} {running}')
            lines.append(f'{name}_bucket{{{labels},le="+Inf"}} {n}')
            lines.append(f"{name}_sum{{{labels}}} {total:.6f}")
            lines.append(f"{name}_count{{{labels}}} {n}")


LATENCY = _Histogram(LATENCY_BUCKETS_SECONDS)


class RequestLatencyMiddleware:
    """Times every request by its URL pattern (not its path: no user data, bounded label set)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None and match.route else "unmatched"
        LATENCY.observe("/" + route.lstrip("^"), request.method, time.perf_counter() - started)
        return response
