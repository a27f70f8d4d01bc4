"""Setting a team's monthly GPU budget: the one write path, audited (docs/conventions.md, "Writes that matter")."""
from decimal import Decimal

from django.db import transaction
from django.forms.models import model_to_dict

from apps.teams.models import AuditEvent

from .models import TeamBudget

BUDGET_FIELDS = ("unit", "monthly_amount", "currency", "email_to", "webhook_url", "active")


def _snapshot(budget):
    if budget is None:
        return None
    values = model_to_dict(budget, fields=BUDGET_FIELDS)
    values["monthly_amount"] = budget.amount_text(Decimal(values["monthly_amount"]))
    return values


def do_set_team_budget(actor, team, **values) -> TeamBudget:
    """Create or change `team`'s budget; leaves an AuditEvent with the old and new values."""
    unknown = set(values) - set(BUDGET_FIELDS)
    if unknown:
        raise TypeError(f"unknown budget fields: {', '.join(sorted(unknown))}")
    with transaction.atomic():
        budget = TeamBudget.objects.select_for_update().filter(team=team).first()
        old = _snapshot(budget)
        if budget is None:
            budget = TeamBudget(team=team)
        for name, value in values.items():
            setattr(budget, name, value)
        budget.full_clean()
        budget.save()
        AuditEvent.objects.create(actor=actor, action="budget.set", target=team.name,
                                  old_value=old, new_value=_snapshot(budget))
    return budget
