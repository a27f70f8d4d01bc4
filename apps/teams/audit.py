"""Audited saves and deletes of the models whose edits move money or ownership (docs/conventions.md,
"Writes that matter"): one transaction, the row written, and an `AuditEvent` with the fields'
old and new values. The `do_*` actions of each app (teams here, node pools and clusters in
`apps/accounting/actions/periods.py`) call these; the admin, the API and commands call the actions.
"""
from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

from django.db import transaction

from .models import AuditEvent, Team


def _plain(value):
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def _values(obj, fields) -> dict:
    return {f: _plain(getattr(obj, f)) for f in fields}


def _actor(actor):
    return actor if actor is not None and actor.is_authenticated else None


def audited_save(actor, obj, action: str, fields: tuple[str, ...], *, clean: bool = True):
    """Save `obj` (created or changed) with an audit event `<action>.create` / `<action>.change`
    holding `fields` old → new; a save that changes none of them leaves no event."""
    with transaction.atomic():
        old = None
        if obj.pk:
            stored = type(obj).objects.select_for_update().filter(pk=obj.pk).first()
            old = _values(stored, fields) if stored is not None else None
        if clean:
            obj.full_clean()
        obj.save()
        new = _values(obj, fields)
        if old != new:
            AuditEvent.objects.create(actor=_actor(actor), action=f"{action}.{'change' if old else 'create'}",
                                      target=f"{type(obj)._meta.model_name} {obj.pk}: {obj}", old_value=old,
                                      new_value=new)
    return obj


def audited_delete(actor, obj, action: str, fields: tuple[str, ...]) -> None:
    """Delete `obj` with an audit event `<action>.delete` holding its `fields`."""
    with transaction.atomic():
        old, target = _values(obj, fields), f"{type(obj)._meta.model_name} {obj.pk}: {obj}"
        obj.delete()
        AuditEvent.objects.create(actor=_actor(actor), action=f"{action}.delete", target=target, old_value=old)


TEAM_FIELDS = ("name", "cost_centre")


def do_save_team(actor, team: Team) -> Team:
    """Create or rename a team (its name is what labels and statements call it), audited."""
    return audited_save(actor, team, "team", TEAM_FIELDS)


def do_delete_team(actor, team: Team) -> None:
    """Delete a team, audited; refused (ProtectedError) when it priced a closed month
    (docs/chargeback.md, "History stays")."""
    audited_delete(actor, team, "team", TEAM_FIELDS)
