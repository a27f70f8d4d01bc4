"""`/metrics`: the portal's own figures in Prometheus text format (docs/deploy.md "/metrics").

Two kinds of figure, kept apart because they live in different places:

* **Requests** (`gpuportal_http_requests_total`, `gpuportal_request_duration_seconds`) are
  prometheus-client metrics, counted by RequestMetricsMiddleware in whichever process served
  the request. Under gunicorn, PROMETHEUS_MULTIPROC_DIR names a directory where every worker
  keeps its counts in memory-mapped files; a scrape sums all of them (MultiProcessCollector), so
  it sees every worker whichever one answers, and a restarted worker's counts are not lost
  (gpuportal/gunicorn.conf.py empties the directory when gunicorn starts). Without it
  (runserver, tests, one process) the counts live in this process's memory.
* **Ingest** (`gpuportal_up`, `gpuportal_ingest_*`) is read from the database at scrape time
  (IngestRun rows and watermarks, gpuportal/health.py), so every worker answers the same.
"""
from __future__ import annotations

import time

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import (CONTENT_TYPE_PLAIN_0_0_4, REGISTRY, CollectorRegistry, Counter, Histogram,
                               disable_created_metrics, generate_latest)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from apps.web.dependencies import DEPENDENCY_ERRORS  # noqa: F401 — registered here too: the cache and broker fallbacks count in it
from gpuportal.health import check_database, cluster_ingest_state, monitoring_allowed, monitoring_refused

# The `*_created` series say when a label set was first seen: noise on a dashboard, and
# multiprocess mode does not write them, so neither mode does.
disable_created_metrics()

LATENCY_BUCKETS_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# A label value per request method a client invents would let anyone grow the series without bound.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

REQUESTS = Counter("gpuportal_http_requests_total", "HTTP requests answered, by route pattern, method and status",
                   ["route", "method", "status"])
LATENCY = Histogram("gpuportal_request_duration_seconds", "time to answer HTTP requests, by route pattern and method",
                    ["route", "method"], buckets=LATENCY_BUCKETS_SECONDS)

# name, type, help, key of gpuportal.health.cluster_ingest_state()
INGEST_SERIES = (
    ("gpuportal_ingest_lag_seconds", "gauge", "now minus the cluster's ingest watermark", "ingest_lag_seconds"),
    ("gpuportal_ingest_last_success_age_seconds", "gauge", "seconds since the last succeeded ingest ended",
     "last_success_age_seconds"),
    ("gpuportal_ingest_rows_written_total", "counter", "rollup rows written by succeeded ingest runs", "rows_written"),
    ("gpuportal_ingest_runs_succeeded_total", "counter", "succeeded ingest runs (IngestRun rows)", "runs_succeeded"),
    ("gpuportal_ingest_task_failures_total", "counter", "failed ingest runs, tasks and commands alike", "runs_failed"),
    ("gpuportal_ingest_gpus_counted_twice", "gauge", "GPUs the last succeeded ingest run found in another cluster's "
     "rows in the same hour (billed twice)", "gpus_counted_twice"),
)


def route_label(request) -> str:
    """The URL pattern that matched, never the path: no user data, a bounded set of values."""
    match = getattr(request, "resolver_match", None)
    if match is None or not match.route:
        return "unmatched"   # a 404, or answered by a middleware before URL resolution
    return "/" + match.route.lstrip("^")


def method_label(request) -> str:
    return request.method if request.method in KNOWN_METHODS else "other"


class RequestMetricsMiddleware:
    """Counts and times every request; first in MIDDLEWARE so the time covers all the others."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        route, method = route_label(request), method_label(request)
        LATENCY.labels(route, method).observe(time.perf_counter() - started)
        REQUESTS.labels(route, method, str(response.status_code)).inc()
        return response


class IngestCollector:
    """The database-backed figures, read once per scrape."""

    def collect(self):
        up = check_database() == "ok"
        yield GaugeMetricFamily("gpuportal_up", "1 when the portal's database answers", value=1 if up else 0)
        clusters = cluster_ingest_state() if up else []
        for name, kind, help_text, key in INGEST_SERIES:
            family_class = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
            family = family_class(name, help_text, labels=["cluster"])
            for c in clusters:
                if c[key] is not None:
                    family.add_metric([c["cluster"]], c[key])
            yield family


def exposition() -> bytes:
    registry = CollectorRegistry()   # one per scrape: nothing registered here outlives it
    if settings.PROMETHEUS_MULTIPROC_DIR:
        MultiProcessCollector(registry, path=settings.PROMETHEUS_MULTIPROC_DIR)
    else:
        registry.register(REGISTRY)   # this process's request metrics, plus process_* and python_*
    registry.register(IngestCollector())
    return generate_latest(registry)


@never_cache
@require_GET
def metrics(request):
    if not monitoring_allowed(request):
        return monitoring_refused()
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_PLAIN_0_0_4)
