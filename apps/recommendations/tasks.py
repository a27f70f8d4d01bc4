"""Celery tasks: a daily advice snapshot, budget and idle checks, one task per alert delivery."""
import logging

from celery import shared_task
from django.conf import settings

from apps.notifications.sending import queue, retry_countdown, send_once

from .alerts import check_budgets, check_idle
from .forecast_alerts import check_budget_forecasts
from .models import AlertDelivery, DeliveryAttempt
from .notify import send_alert

log = logging.getLogger(__name__)


class DeliveryFailed(Exception):
    pass


@shared_task(soft_time_limit=1800, time_limit=1900)
def snapshot_recommendations():
    from .snapshots import do_snapshot_recommendations

    return do_snapshot_recommendations()


@shared_task(soft_time_limit=600, time_limit=660)
def check_alerts():
    """Budget thresholds, budget forecasts and idle episodes; deliveries are queued as their own tasks."""
    raised = check_budgets() + check_budget_forecasts() + check_idle()
    new = [r for r in raised if r.created]
    dispatch([i for r in new for i in r.delivery_ids])
    return [r.alert.key for r in new]


def _log_attempt(delivery: AlertDelivery, outcome) -> None:
    DeliveryAttempt.objects.create(delivery=delivery, ok=outcome.ok, status_code=outcome.status_code,
                                   error=outcome.error)


@shared_task(
    bind=True,
    max_retries=settings.ALERT_WEBHOOK_MAX_RETRIES,
    soft_time_limit=120,
    time_limit=150,
    acks_late=True,
)
def deliver_alert(self, delivery_id: int):
    """Send one delivery through apps/notifications: each attempt is recorded (and logged in
    DeliveryAttempt), failures retry with its backoff and jitter."""
    final = self.request.retries >= self.max_retries
    outcome = send_once(AlertDelivery, delivery_id, lambda d: send_alert(d), final=final,
                        error_field="last_error", on_attempt=_log_attempt)
    if outcome is None:
        return "already sent"
    if not outcome.ok:
        raise self.retry(exc=DeliveryFailed(outcome.error), countdown=retry_countdown(self.request.retries))
    return "sent"


def dispatch(delivery_ids) -> None:
    """Queue one task per delivery (apps/notifications' `queue`): with eager Celery (no broker)
    the task runs here, retries included, and its failure is caught: an alert channel never
    breaks the beat run."""
    for delivery_id in delivery_ids:
        queue(deliver_alert, delivery_id)
