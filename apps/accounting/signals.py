"""What accounting tells the layers above it, which it may not import (docs/architecture.md).

`period_closed` is sent once a month's close has committed, with the period and the close's
instant; apps/reports e-mails the statements on it (docs/chargeback.md, "Statements by e-mail").
A receiver's failure is logged and never undoes the close: the close is committed by then.
"""
import logging

from django.db import transaction
from django.dispatch import Signal

log = logging.getLogger(__name__)

period_closed = Signal()   # keyword arguments: period ("2026-03"), closed_at (aware datetime)


def announce_close(bp) -> None:
    """Send `period_closed` after the transaction that closed `bp` commits (never if it rolls back)."""
    period, closed_at = bp.period, bp.closed_at
    transaction.on_commit(lambda: _send(period, closed_at), robust=True)


def _send(period, closed_at) -> None:
    for receiver, result in period_closed.send_robust(sender=announce_close, period=period, closed_at=closed_at):
        if isinstance(result, Exception):
            log.error("after closing %s, %r failed: %s", period, receiver, result, exc_info=result)
