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
