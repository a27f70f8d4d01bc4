"""Celery tasks: a daily advice snapshot, budget and idle checks, one task per alert delivery."""
from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .models import AlertDelivery, DeliveryAttempt
from .notify import post_webhook, send_email, webhook_payload


class DeliveryFailed(Exception):
    pass


@shared_task(soft_time_limit=1800, time_limit=1900)
def snapshot_recommendations():
    from .snapshots import do_snapshot_recommendations

    return do_snapshot_recommendations()


@shared_task(soft_time_limit=600, time_limit=660)
def check_alerts():
    """Budget thresholds and idle episodes; deliveries are queued as their own tasks."""
    from .alerts import check_budgets, check_idle, dispatch

    raised = check_budgets() + check_idle()
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
