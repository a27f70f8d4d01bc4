"""Celery tasks: a daily advice snapshot, budget and idle checks, one task per alert delivery."""
import logging

from celery import shared_task
from celery.exceptions import Retry
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .alerts import check_budgets, check_idle
from .forecast_alerts import check_budget_forecasts
from .models import AlertDelivery, DeliveryAttempt
from .notify import post_webhook, send_email, webhook_payload

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


def _record(delivery_id: int, ok: bool, status_code=None, error: str = "", final: bool = False):
    with transaction.atomic():
        delivery = AlertDelivery.objects.select_for_update().get(pk=delivery_id)
        DeliveryAttempt.objects.create(delivery=delivery, ok=ok, status_code=status_code, error=error)
        delivery.attempts += 1
        delivery.last_error = error
        if ok:
            delivery.status, delivery.sent_at = AlertDelivery.Status.SENT, timezone.now()
        elif final:
            delivery.status = AlertDelivery.Status.FAILED
        delivery.save(update_fields=["attempts", "last_error", "status", "sent_at"])


@shared_task(
    bind=True,
    autoretry_for=(DeliveryFailed,),
    retry_backoff=30,
    retry_backoff_max=3600,
    retry_jitter=True,
    max_retries=settings.ALERT_WEBHOOK_MAX_RETRIES,
    soft_time_limit=120,
    time_limit=150,
    acks_late=True,
)
def deliver_alert(self, delivery_id: int):
    """Send one delivery; each attempt is recorded, failures retry with backoff and jitter."""
    delivery = AlertDelivery.objects.select_related("alert").get(pk=delivery_id)
    if delivery.status == AlertDelivery.Status.SENT:
        return "already sent"
    final = self.request.retries >= self.max_retries
    if delivery.channel == AlertDelivery.Channel.WEBHOOK:
        ok, code, error = post_webhook(delivery.target, webhook_payload(delivery.alert))
    else:
        code = None
        try:
            send_email(delivery.target, delivery.alert)
            ok, error = True, ""
        except Exception as exc:  # noqa: BLE001 — SMTP errors come in many classes
            ok, error = False, f"{type(exc).__name__}: {exc}"[:2000]
    _record(delivery_id, ok, code, error, final=final)
    if not ok:
        raise DeliveryFailed(error)
    return "sent"


def dispatch(delivery_ids) -> None:
    """Queue one task per delivery. With eager Celery (no broker) the task runs here, retries
    included, so its failure is caught: an alert channel never breaks the beat run."""
    for delivery_id in delivery_ids:
        try:
            deliver_alert.delay(delivery_id)
        except Retry as retry:
            # Eager Celery with task_eager_propagates stops at the first Retry: follow the
            # retry chain inline (without the backoff waits) until it succeeds or gives up.
            _follow_eager_retries(retry.sig, delivery_id)
        except Exception:  # noqa: BLE001 — recorded on the delivery by the task itself
            log.warning("alert delivery %s failed", delivery_id, exc_info=True)


def _follow_eager_retries(sig, delivery_id) -> None:
    while sig is not None:
        try:
            sig.apply()
            sig = None
        except Retry as again:
            sig = again.sig
        except Exception:  # noqa: BLE001 — the last attempt failed; the delivery says so
            log.warning("alert delivery %s failed", delivery_id, exc_info=True)
            sig = None
