"""Celery tasks: the statements by e-mail, when a month is closed and on STATEMENT_SCHEDULE.

Thin and safe to repeat: each sends only the deliveries not yet sent for its edition
(apps/reports/delivery.py); on a worker, failed ones are retried with backoff and jitter.
"""
import logging

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from apps.accounting.core.periods import period_of
from apps.accounting.calendar.zone import billing_zone
from apps.notifications.sending import queue, retry_countdown

from .models import StatementDelivery
from .recipients import statement_recipients

log = logging.getLogger(__name__)


@shared_task(bind=True, max_retries=settings.STATEMENT_SEND_MAX_RETRIES, soft_time_limit=900, time_limit=960,
             acks_late=True)
def send_statements(self, period: str, occasion: str, edition: str):
    # Imported here, and only when someone is to be sent a statement: the sending builds workbooks
    # (openpyxl, a third of a second to import), and this module is loaded by every process at
    # start-up (apps.py connects the close's signal to it) — `manage.py ingest` too. With no broker
    # (the demo) this task runs inside the close's request.
    if not statement_recipients():
        return {"period": period, "failed": 0}
    from .delivery import deliver_statements

    failed = deliver_statements(period, occasion, edition)
    if failed and not self.request.is_eager:
        # Eager Celery (no broker) runs this inside the close's request: the failures stay recorded
        # for an admin to send again (Django admin → Statement deliveries), no waiting here.
        raise self.retry(countdown=retry_countdown(self.request.retries))
    return {"period": period, "failed": len(failed)}


@shared_task(soft_time_limit=900, time_limit=960)
def send_month_to_date_statements():
    """Beat, on STATEMENT_SCHEDULE: the running month's statement so far, one edition per day."""
    today = timezone.now().astimezone(billing_zone()).date()
    return send_statements.delay(period_of(today), StatementDelivery.Occasion.MONTH_TO_DATE,
                                 today.isoformat()).id


def queue_close_statements(sender=None, period: str = "", closed_at=None, **kwargs):
    """`accounting.signals.period_closed` receiver (connected in apps.py): queue the close's mail.
    The signal is sent once the close has committed (`transaction.on_commit` in accounting), so
    this queues at once."""
    queue(send_statements, period, StatementDelivery.Occasion.CLOSE, closed_at.isoformat())
