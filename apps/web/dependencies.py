"""Working on while Redis (the cache and Celery's broker) is away (docs/security.md, "Redis away").

`dependency_failed` counts a call to a dependency that failed and was worked around:
`gpuportal_dependency_errors_total{dependency}` on /metrics (the cache: gpuportal/cache.py; the
broker: `queue_or_run` below). `queue_or_run` queues a Celery task, and when the broker cannot
take it runs it here and now instead, so a write that has committed never loses its follow-up
work (a close's statement e-mails) to a broker outage.
"""
from __future__ import annotations

import logging

from kombu.exceptions import OperationalError
from prometheus_client import Counter

log = logging.getLogger(__name__)

DEPENDENCY_ERRORS = Counter("gpuportal_dependency_errors_total",
                            "calls to a dependency that failed and were answered without it (docs/security.md)",
                            ["dependency"])


def dependency_failed(dependency: str) -> None:
    DEPENDENCY_ERRORS.labels(dependency).inc()


def queue_or_run(task, *args):
    """`task.delay(*args)`; if the broker is unreachable, `task.apply(args)` in this process.

    Nothing waits for the result, so none is asked for: Celery would otherwise first subscribe to
    the result store (the same Redis), retrying for ~20 s before giving up with a RuntimeError."""
    try:
        return task.apply_async(args, ignore_result=True)
    except OperationalError as exc:
        dependency_failed("broker")
        log.warning("Celery broker unavailable (%s): running %s here instead of queueing it", exc, task.name)
        return task.apply(args)
