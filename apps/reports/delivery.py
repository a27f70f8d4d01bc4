"""Statements by e-mail: composing each recipient's statement, sending it, recording it
(docs/chargeback.md, "Statements by e-mail").

Each recipient gets the statement workbook of their scope attached (a team lead's holds their
teams only), through Django's mail backend (EMAIL_* settings). Every send is a
`StatementDelivery` row keyed by period, occasion, edition, address and scope, so sending again
sends only what has not gone yet; a failure is recorded on its row for admins to see. The
sending, the once-only check and the record are apps/notifications' (docs/architecture.md,
"Notifications").
"""
from __future__ import annotations

import logging

from django.conf import settings

from apps.accounting.models.periods import BillingPeriod
from apps.accounting.ledger.statements import statement
from apps.notifications.channels import Outcome, send_email
from apps.notifications.sending import send_once

from .models import StatementDelivery
from .recipients import Recipient, statement_recipients
from .statement_book import statement_book
from .statement_xlsx import scope_text, state_text, statement_workbook, workbook_name
from .xlsx import XLSX_MEDIA_TYPE

log = logging.getLogger(__name__)


def compose(book, recipient: Recipient, attachment: bytes, occasion: str) -> tuple[str, str, list[str], list]:
    """(subject, body, addresses, attachments) of one statement e-mail, for
    apps.notifications.channels.send_email."""
    when = "closed" if occasion == StatementDelivery.Occasion.CLOSE else "month to date"
    totals = "; ".join(f"{currency} {amount}" for currency, amount in book.totals_by_currency.items()) or "nothing priced"
    body = "\n".join([
        f"The chargeback statement for {book.period} is attached ({workbook_name(book.period)}).",
        "",
        f"State: {state_text(book)}",
        f"Teams: {scope_text(book)}",
        f"Totals: {totals}",
        "",
        f"On the portal: {settings.PORTAL_URL.rstrip('/')}/chargeback/?period={book.period}",
    ])
    return (f"[gpuportal] Chargeback statement {book.period} ({when})", body, [recipient.email],
            [(workbook_name(book.period), attachment, XLSX_MEDIA_TYPE)])


def current_close(period: str) -> str | None:
    """The edition of a closed month's statement: its close instant (None while open)."""
    closed_at = (BillingPeriod.objects.filter(period=period, closed_at__isnull=False)
                 .values_list("closed_at", flat=True).first())
    return closed_at.isoformat() if closed_at else None


def deliver_statements(period: str, occasion: str, edition: str) -> list[int]:
    """Send `period`'s statement to every recipient not yet sent this edition; the ids of the
    deliveries that failed. A close's edition is its instant: a month reopened or closed again
    since is not sent (its own close sends the statement it froze)."""
    if occasion == StatementDelivery.Occasion.CLOSE and current_close(period) != edition:
        log.warning("statements of %s not sent: the close of %s is no longer the month's", period, edition)
        return []
    recipients = statement_recipients()
    stmt = statement(period) if recipients else None
    workbooks: dict = {}
    failed = []
    for recipient in recipients:
        delivery, _ = StatementDelivery.objects.get_or_create(
            period=period, occasion=occasion, edition=edition, email=recipient.email, scope=recipient.scope,
            defaults={"user_id": recipient.user_id})
        outcome = send_once(StatementDelivery, delivery.pk, lambda _row: _send(stmt, recipient, workbooks, occasion))
        if outcome is not None and not outcome.ok:
            failed.append(delivery.pk)
    return failed


def _send(stmt, recipient: Recipient, workbooks: dict, occasion: str) -> Outcome:
    """One statement e-mail, through apps/notifications; a recipient who may not be sent one
    is a failed delivery saying why."""
    if recipient.refused:
        return Outcome(False, None, recipient.refused)
    try:
        if recipient.teams not in workbooks:
            book = statement_book(stmt, None if recipient.teams is None else set(recipient.teams))
            workbooks[recipient.teams] = (book, statement_workbook(book))
        book, attachment = workbooks[recipient.teams]
    except Exception as exc:  # noqa: BLE001 — recorded on the delivery, like a failed send
        return Outcome.failed(exc)
    subject, body, to, attachments = compose(book, recipient, attachment, occasion)
    return send_email(subject, body, to, attachments)
