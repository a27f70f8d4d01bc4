"""Stored month answers are recomputed when their inputs change, not by the first reader
(docs/performance.md, "Recomputed on write").

Every write to a declared input (`stored/inputs.py`) saved through Django — a rate, a node pool,
a namespace move, a label or claim, a team, a cluster's name or label trust — and every ingest
run queues `tasks.prepare_month_answers` for the months it may touch once its transaction has
committed (`transaction.on_commit`), so the answer is stored before anyone asks. Closing and
reopening store their own. The beat still runs the same task every `INGEST_BEAT_MINUTES` as a
safety net. A database that keeps no answers (SQLite, the demo) queues nothing.

When the broker is unreachable the write still commits: the failure to queue is logged (one
line) and the next beat, or the first reader, computes the answer.
"""
from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.apps import apps as django_apps
from django.db import connection, transaction
from django.db.models.signals import post_delete, post_save

from apps.accounting.stored.inputs import DATED, UNDATED
from apps.accounting.stored.versions import stored_answers
from apps.accounting.core.periods import next_period, period_of
from apps.accounting.calendar.zone import billing_zone

log = logging.getLogger(__name__)


def months_of(start: datetime, end: datetime) -> list[str]:
    """The billing months [start, end) touches, in order."""
    zone = billing_zone()
    first = period_of(start.astimezone(zone).date())
    last = period_of((end - timedelta(microseconds=1)).astimezone(zone).date())
    out = [first]
    while out[-1] < last:
        out.append(next_period(out[-1]))
    return out


class _Pending:
    """The months one transaction asks to recompute: one task per commit, however many rows it
    wrote (an ingest run writes thousands of label rows, each a post_save)."""

    def __init__(self):
        self.periods: set[str] = set()
        self.default = False
        self.ran = False

    def add(self, periods) -> None:
        if periods:
            self.periods.update(periods)
        else:
            self.default = True

    def __call__(self) -> None:
        self.ran = True
        _queue(sorted(self.periods), self.default)


def refresh_after_commit(periods: list[str] | None = None) -> None:
    """Queue the recompute of `periods` (none given: last month and this one) after the current
    transaction commits; right away when there is none."""
    if not stored_answers():
        return
    pending = None
    if connection.in_atomic_block:
        pending = next((f for _sids, f, _robust in connection.run_on_commit
                        if isinstance(f, _Pending) and not f.ran), None)
    if pending is not None:
        pending.add(periods)
        return
    pending = _Pending()
    pending.add(periods)
    transaction.on_commit(pending, robust=True)


_recompute = None   # the Celery task that recomputes months' answers: `connect` is handed it


def _queue(periods: list[str], recent: bool) -> None:
    if _recompute is None:
        return
    try:
        # No result is asked for: `.delay` would first subscribe to the result store (the same
        # Redis) and, with Redis away, retry that for ~20 s inside the committing request.
        _recompute.apply_async((periods, recent), ignore_result=True)
    except Exception as exc:  # noqa: BLE001 — a broker outage must not fail a committed write
        log.warning("stored answers not queued for recompute (%s: %s); the next beat or reader computes them",
                    type(exc).__name__, exc)


def _on_input_write(sender, **kwargs) -> None:
    refresh_after_commit()


def input_models() -> list:
    """The models whose tables are declared inputs of a month answer (usage tables are written by
    ingest in bulk, which calls `refresh_after_commit` itself)."""
    tables = set(UNDATED) | set(DATED)
    return [m for m in django_apps.get_models() if m._meta.db_table in tables]


def connect(recompute) -> None:
    """Recompute with `recompute` (a Celery task taking periods and `recent`) after every write to an
    input. The store sits below the tasks that fill it, so apps.py hands it the task (docs/architecture.md)."""
    global _recompute
    _recompute = recompute
    for model in input_models():
        uid = f"accounting.refresh.{model._meta.label_lower}"
        post_save.connect(_on_input_write, sender=model, dispatch_uid=uid + ".save", weak=False)
        post_delete.connect(_on_input_write, sender=model, dispatch_uid=uid + ".delete", weak=False)
