"""What every accounting action shares: its refusals and its audit row (docs/conventions.md,
"Writes that matter")."""
from __future__ import annotations

from apps.teams.models import AuditEvent


class ActionError(ValueError):
    """A refused write; the message says why, for the API, the page and the CLI alike."""


class NotAllowed(ActionError):
    """The actor may not do this at all: pages and the API answer it with a 403."""


def audit(actor, action, target, old=None, new=None):
    """The audit row of an action: who did what to which target, from which value to which."""
    AuditEvent.objects.create(actor=actor if actor and actor.is_authenticated else None, action=action,
                              target=target, old_value=old, new_value=new)
