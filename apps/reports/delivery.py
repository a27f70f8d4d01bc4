"""Statements by e-mail: who gets which statement, composing it, sending it, recording it
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
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from apps.accounting.models.periods import BillingPeriod
from apps.accounting.statements import statement
from apps.notifications.channels import Outcome, send_email
from apps.notifications.sending import send_once
from apps.teams.access import ROLE_FINANCE, ROLE_TEAM_LEAD, can_see_money, money_scope
from apps.teams.models import AuditEvent

from .models import StatementDelivery, StatementRecipient
from .statement_book import statement_book
from .statement_xlsx import scope_text, state_text, statement_workbook, workbook_name
from .xlsx import XLSX_MEDIA_TYPE

log = logging.getLogger(__name__)
ALL_TEAMS = "all teams"


@dataclass(frozen=True)
class Recipient:
    email: str
    teams: frozenset | None      # None: every team and the unallocated capacity
    user_id: int | None = None
    refused: str = ""            # why nothing may be sent (recorded as a failed delivery)

    @property
    def scope(self) -> str:
        if self.teams is None:
            return ALL_TEAMS
        return ", ".join(sorted(self.teams)) or "no team"


def _for_user(user, team=None) -> Recipient:
    """What a user may be sent: their own money scope (`money_scope`, never widened by `viewer`),
    narrowed to `team` when given."""
    if not can_see_money(user):
        return Recipient(user.email, frozenset(), user.pk, f"{user.get_username()} may not see money figures")
    scope = money_scope(user)
    if team is not None:
        if scope is not None and team.name not in scope:
            return Recipient(user.email, frozenset(), user.pk, f"team {team.name!r} is not one of "
                                                               f"{user.get_username()}'s")
        scope = {team.name}
    if scope is not None and not scope:
        return Recipient(user.email, frozenset(), user.pk, f"{user.get_username()} leads no team")
    return Recipient(user.email, None if scope is None else frozenset(scope), user.pk)


def statement_recipients() -> list[Recipient]:
    """The defaults (finance users, and team leads of at least one team, with an e-mail address)
    unless a StatementRecipient row names the user, plus every enabled row."""
    rows = list(StatementRecipient.objects.select_related("user", "team"))
    named = {r.user_id for r in rows if r.user_id is not None}
    users = (get_user_model().objects.filter(is_active=True, groups__name__in=(ROLE_FINANCE, ROLE_TEAM_LEAD))
             .exclude(email="").exclude(pk__in=named).distinct().order_by("username"))
    out = [r for r in (_for_user(u) for u in users) if not r.refused]   # a lead of no team: no default
    for row in rows:
        if not row.enabled:
            continue
        if row.user_id is not None:
            if row.user.is_active and row.user.email:
                out.append(_for_user(row.user, row.team))
        else:
            out.append(Recipient(row.email, None if row.team_id is None else frozenset({row.team.name})))
    unique = {}
    for r in out:
        unique.setdefault((r.email.lower(), r.scope), r)
    return list(unique.values())


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


# ---------------------------------------------------------------- who receives what: audited writes

def do_save_recipient(actor, recipient: StatementRecipient) -> StatementRecipient:
    with transaction.atomic():
        old = None
        if recipient.pk:
            old = _as_dict(StatementRecipient.objects.select_for_update().get(pk=recipient.pk))
        recipient.full_clean()
        recipient.save()
        AuditEvent.objects.create(actor=_actor(actor), action="statement_recipient.change" if old else
                                  "statement_recipient.create", target=f"statement recipient {recipient.pk}",
                                  old_value=old, new_value=_as_dict(recipient))
    return recipient


def do_delete_recipient(actor, recipient: StatementRecipient) -> None:
    with transaction.atomic():
        old, pk = _as_dict(recipient), recipient.pk
        recipient.delete()
        AuditEvent.objects.create(actor=_actor(actor), action="statement_recipient.delete",
                                  target=f"statement recipient {pk}", old_value=old, new_value=None)


def _actor(actor):
    return actor if actor is not None and actor.is_authenticated else None


def _as_dict(r: StatementRecipient) -> dict:
    return {"user": r.user.get_username() if r.user_id else None, "email": r.email,
            "team": r.team.name if r.team_id else None, "enabled": r.enabled}
