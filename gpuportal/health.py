"""The portal's own health: `/healthz` (readiness) and `/livez` (liveness) for load balancers
and Kubernetes probes; `/metrics` lives in gpuportal/metrics.py and reads its ingest figures
from here.

`/livez` and the plain `/healthz` answer are open (no login): status and which dependency is
down, nothing else. The per-cluster ingest detail of `/healthz` (cluster names, lags; it
aggregates every ingest run, so it is not free either) and `/metrics` answer only a caller
that `monitoring_allowed` (docs/deploy.md "/metrics").
"""
from __future__ import annotations

import hmac

from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, Q, Sum
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

def monitoring_allowed(request) -> bool:
    """`Authorization: Bearer <METRICS_TOKEN>` when a token is set; without one, METRICS_PUBLIC."""
    token = settings.METRICS_TOKEN
    if not token:
        return settings.METRICS_PUBLIC
    scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def monitoring_refused() -> HttpResponse:
    response = HttpResponse("send Authorization: Bearer <METRICS_TOKEN> (docs/deploy.md, \"/metrics\")\n",
                            status=401, content_type="text/plain; charset=utf-8")
    response["WWW-Authenticate"] = 'Bearer realm="gpuportal monitoring"'
    return response


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
    from apps.ingest.models import counted_twice_by_cluster
    twice = counted_twice_by_cluster()
    out = []
    for r in rows:
        age = (now - r["last_ok"]).total_seconds() if r["last_ok"] else None
        lag = (now - r["ingested_until"]).total_seconds() if r["ingested_until"] else None
        out.append({"cluster": r["name"], "last_success_age_seconds": None if age is None else round(age, 1),
                    "ingest_lag_seconds": None if lag is None else round(lag, 1),
                    "ingested_until": r["ingested_until"].isoformat() if r["ingested_until"] else None,
                    "rows_written": r["rows"] or 0, "runs_succeeded": r["ok"], "runs_failed": r["failed"],
                    "gpus_counted_twice": twice.get(r["name"], 0),
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
    """200 when the database (and Redis, if configured) answer; 503 otherwise, naming which.

    For a caller with the monitoring token (`monitoring_allowed`) it adds each cluster's ingest
    state and `ingest: "stale"`, which fails the check only with `?strict=1`: a web worker that
    cannot ingest is still worth routing traffic to. `?strict=1` without the token is a 401.
    """
    detail = monitoring_allowed(request)
    strict = request.GET.get("strict") in ("1", "true")
    if strict and not detail:
        return monitoring_refused()
    database, redis_state = check_database(), check_redis()
    healthy = database == "ok" and redis_state in ("ok", "not configured")
    body = {"status": "ok", "database": database, "redis": redis_state}
    if detail:
        clusters = cluster_ingest_state() if database == "ok" else []
        body["ingest"] = "stale" if any(c["stale"] for c in clusters) else "ok"
        body["clusters"] = [{k: c[k] for k in ("cluster", "last_success_age_seconds", "ingest_lag_seconds", "stale")}
                            for c in clusters]
        if strict and body["ingest"] != "ok":
            healthy = False
    body["status"] = "ok" if healthy else "unhealthy"
    return JsonResponse(body, status=200 if healthy else 503)


@never_cache
@require_GET
def livez(request):
    """200 whenever this process answers: no database, no Redis (docs/deploy.md "Probes").

    A liveness probe that followed the database would restart every web pod during a database
    outage, which heals nothing; readiness (`/healthz`) takes them out of the Service instead.
    """
    return JsonResponse({"status": "ok"})
