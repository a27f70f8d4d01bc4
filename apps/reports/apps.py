from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "apps.reports"
    label = "reports"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # A closed month's statements go out by e-mail after the close commits (docs/chargeback.md).
        from apps.accounting.signals import period_closed

        from .tasks import queue_close_statements

        period_closed.connect(queue_close_statements, dispatch_uid="reports.statements_on_close")
        # The worker renders the month's common API bodies once its answer is current (docs/performance.md).
        from apps.accounting.signals import month_prepared

        month_prepared.connect(_prepare_bodies, dispatch_uid="reports.bodies_on_prepare")


def _prepare_bodies(sender=None, **kwargs):
    """`month_prepared` receiver: the API's rendering (DRF, the workbook library) is imported when
    a month is prepared, not by every process that loads the apps (an ingest, a web worker's
    start-up: docs/performance.md, "Process start-up")."""
    from .api.prepared import prepare_bodies

    return prepare_bodies(sender=sender, **kwargs)
