"""One way out (docs/architecture.md, "Notifications"): statements and alerts both send through
apps/notifications: its channels (Django's locmem mail backend, a loopback HTTP receiver, a
closed SMTP port for failures), its once-only log on their delivery rows, its backoff, and its
queueing after commit."""
import ast
import socket
from pathlib import Path

import pytest
from django.core import mail
from django.db import transaction

from apps.notifications.channels import Outcome, post_webhook, send_email
from apps.notifications.sending import queue_after_commit, retry_countdown, send_once
from apps.recommendations import tasks as alert_tasks
from apps.recommendations.models import Alert, AlertDelivery, DeliveryAttempt
from apps.reports.delivery import deliver_statements
from apps.reports.models import StatementDelivery, StatementRecipient
from apps.reports.tasks import send_statements
from tests.support.webhook_receiver import Receiver

ROOT = Path(__file__).resolve().parents[2]
LOCMEM = "django.core.mail.backends.locmem.EmailBackend"


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_backoff_doubles_from_a_minute_up_to_an_hour_with_jitter():
    # retry n waits min(3600, 60 × 2^n) seconds times a factor in [0.5, 1]
    for retries, (low, high) in {0: (30, 60), 1: (60, 120), 3: (240, 480), 6: (1800, 3600), 12: (1800, 3600)}.items():
        waits = [retry_countdown(retries) for _ in range(50)]
        assert all(low <= w <= high for w in waits), (retries, min(waits), max(waits))


def test_webhook_channel_answers_an_outcome(settings):
    with Receiver(codes=(200, 500)) as receiver:
        assert post_webhook(receiver.url, {"text": "hello"}) == Outcome(True, 200, "")
        assert post_webhook(receiver.url, {"text": "again"}) == Outcome(False, 500, "HTTP 500")
    assert [r["json"] for r in receiver.received] == [{"text": "hello"}, {"text": "again"}]


def test_email_channel_sends_with_attachments_and_never_raises(settings):
    settings.EMAIL_BACKEND = LOCMEM
    assert send_email("[gpuportal] hi", "body", ["a@example.com"], [("x.bin", b"\x01", "application/octet-stream")]).ok
    assert [(m.subject, m.to, m.attachments) for m in mail.outbox] == [
        ("[gpuportal] hi", ["a@example.com"], [("x.bin", b"\x01", "application/octet-stream")])]
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", closed_port(), 5
    failed = send_email("[gpuportal] hi", "body", ["a@example.com"])
    assert not failed.ok and failed.error.startswith("ConnectionRefusedError:")


@pytest.fixture
def one_statement_and_one_alert(db, settings):
    """Accounts payable gets March's statement (month to date); an alert goes to the lead."""
    settings.BILLING_TIMEZONE = "UTC"
    StatementRecipient.objects.create(email="ap@example.com")
    alert = Alert.objects.create(key="budget:vision:2026-03:80", kind=Alert.Kind.BUDGET, team="vision",
                                 text="GPU budget: team vision has used 80 %.", fields={"team": "vision"})
    return AlertDelivery.objects.create(alert=alert, channel=AlertDelivery.Channel.EMAIL, target="lead@example.com")


def test_statements_and_alerts_fail_and_then_send_once_by_the_same_path(one_statement_and_one_alert, settings,
                                                                          monkeypatch):
    alert_delivery = one_statement_and_one_alert
    monkeypatch.setattr(alert_tasks.deliver_alert, "max_retries", 0)    # the first failure is final
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", closed_port(), 5

    [failed_id] = deliver_statements("2026-03", StatementDelivery.Occasion.MONTH_TO_DATE, "2026-03-05")
    alert_tasks.dispatch([alert_delivery.pk])
    statement_row, alert_row = StatementDelivery.objects.get(pk=failed_id), AlertDelivery.objects.get()
    # one record of the attempt, in one shape, whichever app composed the message
    for row, error in ((statement_row, statement_row.error), (alert_row, alert_row.last_error)):
        assert (row.status, row.attempts, row.sent_at) == ("failed", 1, None)
        assert error.startswith("ConnectionRefusedError:")
    assert DeliveryAttempt.objects.get().error == alert_row.last_error

    settings.EMAIL_BACKEND = LOCMEM
    assert deliver_statements("2026-03", StatementDelivery.Occasion.MONTH_TO_DATE, "2026-03-05") == []
    alert_tasks.dispatch([alert_delivery.pk])
    assert sorted(m.to[0] for m in mail.outbox) == ["ap@example.com", "lead@example.com"]
    # sent is sent: neither sends again
    deliver_statements("2026-03", StatementDelivery.Occasion.MONTH_TO_DATE, "2026-03-05")
    alert_tasks.dispatch([alert_delivery.pk])
    assert len(mail.outbox) == 2
    assert [(r.status, r.attempts) for r in (StatementDelivery.objects.get(), AlertDelivery.objects.get())] == \
        [("sent", 2), ("sent", 2)]


def test_send_once_keeps_a_row_pending_until_the_final_attempt(one_statement_and_one_alert):
    delivery = one_statement_and_one_alert
    refused = Outcome(False, None, "HTTP 503")
    assert send_once(AlertDelivery, delivery.pk, lambda row: refused, final=False, error_field="last_error") == refused
    row = AlertDelivery.objects.get()
    assert (row.status, row.attempts, row.last_error) == ("pending", 1, "HTTP 503")
    send_once(AlertDelivery, delivery.pk, lambda row: refused, final=True, error_field="last_error")
    assert AlertDelivery.objects.get().status == "failed"


def test_queued_after_commit_never_on_rollback(one_statement_and_one_alert, settings,
                                               django_capture_on_commit_callbacks):
    settings.EMAIL_BACKEND = LOCMEM
    with django_capture_on_commit_callbacks(execute=True):
        try:
            with transaction.atomic():
                queue_after_commit(send_statements, "2026-03", StatementDelivery.Occasion.MONTH_TO_DATE, "d1")
                raise RuntimeError("the write failed")
        except RuntimeError:
            pass
    assert mail.outbox == [] and not StatementDelivery.objects.exists()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with transaction.atomic():
            queue_after_commit(send_statements, "2026-03", StatementDelivery.Occasion.MONTH_TO_DATE, "d2")
        assert mail.outbox == []                      # not before the commit
    for callback in callbacks:
        callback()
    assert [m.to for m in mail.outbox] == [["ap@example.com"]]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_only_notifications_sends_mail():
    """import-linter cannot forbid a part of Django, so this does: no app but apps/notifications
    imports django.core.mail, and statements and alerts both import apps/notifications."""
    senders = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "apps").rglob("*.py")
                     if any(n == "django.core.mail" or n.startswith("django.core.mail.") for n in _imports(p)))
    assert senders == ["apps/notifications/channels.py"]
    for module in ("apps/reports/delivery.py", "apps/recommendations/notify.py"):
        assert any(n.startswith("apps.notifications") for n in _imports(ROOT / module)), module
