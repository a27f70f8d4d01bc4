import os

from celery import Celery
from celery.schedules import crontab

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuportal.settings")

app = Celery("gpuportal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# A worker's connections get STATEMENT_TIMEOUT_WORKER_SECONDS (docs/security.md).
from .dbtimeout import connect_worker_signals  # noqa: E402

connect_worker_signals()


@app.on_after_finalize.connect
def setup_periodic_tasks(sender, **kwargs):
    from django.conf import settings

    sender.add_periodic_task(
        settings.INGEST_BEAT_MINUTES * 60.0,
        sender.signature("apps.ingest.tasks.ingest_due_clusters"),
        name="ingest every closed hour of every cluster",
    )
    sender.add_periodic_task(
        settings.INGEST_BEAT_MINUTES * 60.0,
        sender.signature("apps.accounting.tasks.prepare_month_answers"),
        name="keep this month's and last month's answers stored",
    )
    sender.add_periodic_task(
        crontab(hour=2, minute=10),
        sender.signature("apps.accounting.tasks.compact_input_changes"),
        name="compact the log of input changes that versions month answers",
    )
    sender.add_periodic_task(
        crontab(hour=2, minute=30),
        sender.signature("apps.recommendations.tasks.snapshot_recommendations"),
        name="store the daily quota advice snapshot",
    )
    sender.add_periodic_task(
        settings.ALERT_BEAT_MINUTES * 60.0,
        sender.signature("apps.recommendations.tasks.check_alerts"),
        name="budget and idle-GPU alerts",
    )
    if settings.STATEMENT_SCHEDULE:
        sender.add_periodic_task(
            settings.STATEMENT_CRONTAB,
            sender.signature("apps.reports.tasks.send_month_to_date_statements"),
            name="e-mail the month-to-date statements (STATEMENT_SCHEDULE)",
        )
