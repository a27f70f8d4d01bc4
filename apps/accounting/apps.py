from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _sync_input_triggers(sender, using, **kwargs):
    """After every `migrate`: the stored answers' input triggers match their declaration."""
    from django.db import connections

    from apps.accounting.stored.inputs import sync_triggers
    sync_triggers(connections[using])


class AccountingConfig(AppConfig):
    name = "apps.accounting"
    label = "accounting"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import checks  # noqa: F401 — registers the system checks
        from apps.accounting.stored import refresh
        from apps.accounting.tasks import prepare_month_answers
        refresh.connect(prepare_month_answers)
        # What priced a closed month cannot be deleted (docs/chargeback.md, "History stays").
        from apps.clusters.models import Cluster
        from apps.teams.models import Team
        from apps.web.deletes import delete_refusals, guard

        from apps.accounting.models import Rate
        from apps.accounting.ledger.statements import delete_refusals as refusals_of_closed_months
        for model in (Cluster, Team, Rate):
            delete_refusals.connect(refusals_of_closed_months, sender=model,
                                    dispatch_uid=f"accounting.closed_months.{model._meta.label}")
            guard(model)
        post_migrate.connect(_sync_input_triggers, sender=self, dispatch_uid="accounting.sync_input_triggers")
