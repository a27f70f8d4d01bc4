"""What accounting tells the layers above it, which it may not import (docs/architecture.md).

`period_closed` is sent once a month's close has committed, with the period and the close's
instant; apps/reports e-mails the statements on it (docs/chargeback.md, "Statements by e-mail").
A receiver's failure is logged and never undoes the close: the close is committed by then.

`month_prepared` is sent by the worker's task (`tasks.prepare_month_answers`) once a month's
stored answer is current; apps/reports renders the month's common API bodies on it, so the first
read after the worker sends stored bytes (docs/performance.md, "Bodies rendered by the worker").

`history_asked` asks the layers above when the fleet's history begins by their records (ingest:
its first succeeded run's window), for a close to refuse a month before it (`history_start`).
"""
import logging

from django.db import transaction
from django.dispatch import Signal

log = logging.getLogger(__name__)

period_closed = Signal()   # keyword arguments: period ("2026-03"), closed_at (aware datetime)
month_prepared = Signal()  # keyword argument: period; sent by the worker once its stored answer is current
history_asked = Signal()   # no arguments; a receiver returns an aware datetime, or None: no history


def announce_close(bp) -> None:
    """Send `period_closed` after the transaction that closed `bp` commits (never if it rolls back)."""
    period, closed_at = bp.period, bp.closed_at
    transaction.on_commit(lambda: _send(period, closed_at), robust=True)


def _send(period, closed_at) -> None:
    for receiver, result in period_closed.send_robust(sender=announce_close, period=period, closed_at=closed_at):
        if isinstance(result, Exception):
            log.error("after closing %s, %r failed: %s", period, receiver, result, exc_info=result)


def history_starts() -> list:
    """The instants the layers above say the fleet's history begins at (None answers left out).
    A receiver that fails is logged and counts as no answer."""
    starts = []
    for receiver, result in history_asked.send_robust(sender=history_starts):
        if isinstance(result, Exception):
            log.error("asking %r when history begins failed: %s", receiver, result, exc_info=result)
        elif result is not None:
            starts.append(result)
    return starts


def announce_prepared(period: str) -> None:
    """Send `month_prepared` (in the worker, after the month's answer was made current). A
    receiver's failure is logged: the stored answer stands, a read renders what it lacks."""
    for receiver, result in month_prepared.send_robust(sender=announce_prepared, period=period):
        if isinstance(result, Exception):
            log.error("after preparing %s, %r failed: %s", period, receiver, result, exc_info=result)
