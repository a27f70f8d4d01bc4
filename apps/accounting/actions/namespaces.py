"""Moving a namespace to a team from a date on: atomic and audited (docs/teams-and-relabels.md)."""
from __future__ import annotations

from datetime import date

from django.db import transaction

from apps.teams.models import Namespace, NamespaceAssignment, Team

from apps.accounting.core.periods import last_day, period_of
from apps.accounting.models import BillingPeriod

from apps.accounting.actions.audit import ActionError, audit


def do_assign_namespace(namespace: Namespace, team: Team, effective_from: date, actor=None) -> NamespaceAssignment:
    """Move a namespace to a team from a billing-zone date on. Closed months keep their
    mapping: a move that would be in force during a closed month is refused."""
    with transaction.atomic():
        blocking = (BillingPeriod.objects.select_for_update().filter(closed_at__isnull=False)
                    .filter(period__gte=period_of(effective_from)).order_by("-period").first())
        if blocking is not None:
            raise ActionError(f"{blocking.period} is closed; a move dated {effective_from} would change it. "
                              f"Date it {_day_after(blocking.period)} "
                              "or later, or have an admin reopen the period")
        old = (NamespaceAssignment.objects.filter(namespace=namespace, effective_from__lte=effective_from)
               .select_related("team").order_by("-effective_from").first())
        assignment, _ = NamespaceAssignment.objects.update_or_create(
            namespace=namespace, effective_from=effective_from,
            defaults={"team": team, "created_by": actor if actor and actor.is_authenticated else None},
        )
        audit(actor, "namespace.assign", str(namespace),
               {"team": old.team.name, "effective_from": old.effective_from.isoformat()} if old else None,
               {"team": team.name, "effective_from": effective_from.isoformat()})
    return assignment


def _day_after(period: str) -> date:
    return date.fromordinal(last_day(period).toordinal() + 1)
