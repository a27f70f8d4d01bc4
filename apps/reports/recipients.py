"""Who receives the statements by e-mail, and what each may be sent (docs/chargeback.md): the
defaults (finance, leads of a team) and the admin's StatementRecipient rows, with their
audited writes. Kept apart from the sending (delivery.py) so the admin and start-up load no
workbook code."""
from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction

from apps.teams.access import ROLE_FINANCE, ROLE_TEAM_LEAD, can_see_money, money_scope
from apps.teams.models import AuditEvent

from .models import StatementRecipient

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
