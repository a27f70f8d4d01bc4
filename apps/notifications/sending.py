"""Sending once, retrying, queueing (docs/architecture.md, "Notifications").

A delivery row (a statement to one address, an alert to one channel) belongs to the app that
composes the message; it has `status` (pending, sent, failed), `attempts`, `sent_at` and an
error field. `send_once` is the only code that reads and writes those four for a send.
"""
from __future__ import annotations

import logging
import random
from typing import Callable

from celery.exceptions import Retry
from django.db import transaction
from django.utils import timezone

from apps.web.dependencies import queue_or_run

from .channels import Outcome

log = logging.getLogger(__name__)

PENDING, SENT, FAILED = "pending", "sent", "failed"
BACKOFF_FIRST_SECONDS = 60
BACKOFF_MAX_SECONDS = 3600


def send_once(model, delivery_id: int, send: Callable[[object], Outcome], *, final: bool = True,
              error_field: str = "error", on_attempt: Callable | None = None) -> Outcome | None:
    """Send delivery `delivery_id` of `model` unless it went already (None then): `send(row)`
    makes the attempt, and the row records it: one more attempt, the error (empty when sent),
    `sent` with its time, or `failed` once the attempt is `final` (until then it stays pending,
    for the retry). `on_attempt(row, outcome)` runs in the same transaction (an attempt log)."""
    row = model.objects.get(pk=delivery_id)
    if row.status == SENT:
        return None
    outcome = send(row)
    with transaction.atomic():
        row = model.objects.select_for_update().get(pk=delivery_id)
        row.attempts += 1
        setattr(row, error_field, outcome.error)
        if outcome.ok:
            row.status, row.sent_at = SENT, timezone.now()
        elif final:
            row.status, row.sent_at = FAILED, None
        row.save(update_fields=["attempts", error_field, "status", "sent_at"])
        if on_attempt is not None:
            on_attempt(row, outcome)
    return outcome


def retry_countdown(retries: int, first: float = BACKOFF_FIRST_SECONDS, cap: float = BACKOFF_MAX_SECONDS) -> float:
    """Seconds before retry number `retries` + 1: `first` doubled per retry, at most `cap`, times
    a random factor in [0.5, 1] so many failed sends do not come back at the same instant
    (60 s → 30–60 s, then 60–120 s, 120–240 s, …, 30–60 minutes)."""
    return min(cap, first * 2 ** retries) * random.uniform(0.5, 1.0)


def queue(task, *args) -> None:
    """Queue `task(*args)` now (run it here if the broker is away). With eager Celery (no
    broker) it runs here, its retries followed inline without the waits, and a failure is
    logged, never raised: the delivery row records it, and the caller's work stands."""
    try:
        queue_or_run(task, *args)
    except Retry as retry:
        _follow_eager_retries(task, retry.sig, args)
    except Exception:  # noqa: BLE001 — recorded on the delivery by the task itself
        log.warning("%s%r failed", task.name, args, exc_info=True)


def queue_after_commit(task, *args) -> None:
    """`queue(task, *args)` once the caller's transaction commits; never if it rolls back. With
    no transaction open it queues at once."""
    transaction.on_commit(lambda: queue(task, *args), robust=True)


def _follow_eager_retries(task, sig, args) -> None:
    while sig is not None:
        try:
            sig.apply()
            sig = None
        except Retry as again:
            sig = again.sig
        except Exception:  # noqa: BLE001 — the last attempt failed; the delivery says so
            log.warning("%s%r failed", task.name, args, exc_info=True)
            sig = None
