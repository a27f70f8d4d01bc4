"""Statements by e-mail (docs/chargeback.md, "Statements by e-mail"): closing a month mails each
recipient their statement workbook after the close commits; every delivery is recorded; a failed
send never undoes the close and is sent again by repeating the task. Django's locmem mail backend
(`mail.outbox`) and eager Celery (no REDIS_URL in tests), as the alert deliveries are tested."""
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import mail
from django.utils import timezone

from apps.accounting.actions.audit import ActionError
from apps.accounting.actions.periods import do_close_period, do_reopen_period
from apps.accounting.models import BillingPeriod
from apps.accounting.signals import period_closed
from apps.clusters.models import Cluster
from apps.reports.models import StatementDelivery, StatementRecipient
from apps.reports.tasks import send_month_to_date_statements, send_statements
from apps.teams.models import AuditEvent, Team

from tests.support.factories import make_device, make_team, make_usage, make_user, utc
from .workbook import build_march, read_book, table

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def march(team_lead, finance, viewer, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    for user, address in ((finance, "finance@example.com"), (team_lead, "lead@example.com"),
                          (viewer, "viewer@example.com")):
        user.email = address
        user.save()
    lead_b = make_user("lead_b", "team_lead")          # leads B but has no address: no mail
    make_team("B", lead=lead_b)
    return build_march(team_lead, finance)


def sent_to():
    return {m.to[0]: m for m in mail.outbox}


def attached_by_team(message):
    [(name, content, mimetype)] = message.attachments
    assert name == "chargeback-2026-03-statement.xlsx" and mimetype.startswith("application/vnd.openxmlformats")
    rows, totals = table(read_book(content)["By team"])
    return [(r["Team"], r["Currency"], r["Cost"]) for r in rows], totals


def close_march(finance, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return do_close_period("2026-03", actor=finance)


def test_closing_mails_finance_and_each_team_lead_their_statement(march, finance, django_capture_on_commit_callbacks):
    bp = close_march(finance, django_capture_on_commit_callbacks)
    messages = sent_to()
    assert set(messages) == {"finance@example.com", "lead@example.com"}     # viewer and lead_b: none
    finance_mail = messages["finance@example.com"]
    assert finance_mail.subject == "[gpuportal] Chargeback statement 2026-03 (closed)"
    assert f"State: closed at {bp.closed_at:%Y-%m-%d %H:%M} UTC by finance" in finance_mail.body
    assert "Totals: JPY 450; USD 38.74" in finance_mail.body
    assert "http://localhost:8000/chargeback/?period=2026-03" in finance_mail.body
    assert attached_by_team(finance_mail) == (
        [("A", "JPY", 450), ("A", "USD", 30.45), ("B", "USD", 5.94), ("unallocated capacity", "USD", 2.35)],
        {"JPY": 450, "USD": 38.74})
    assert attached_by_team(messages["lead@example.com"]) == ([("A", "JPY", 450), ("A", "USD", 30.45)],
                                                              {"JPY": 450, "USD": 30.45})
    assert "Teams: A\n" in messages["lead@example.com"].body
    deliveries = StatementDelivery.objects.order_by("email")
    assert [(d.email, d.scope, d.occasion, d.edition, d.status, d.attempts, d.error) for d in deliveries] == [
        ("finance@example.com", "all teams", "close", bp.closed_at.isoformat(), "sent", 1, ""),
        ("lead@example.com", "A", "close", bp.closed_at.isoformat(), "sent", 1, "")]
    assert all(d.sent_at is not None for d in deliveries)


def test_admin_chosen_recipients_replace_and_add_to_the_defaults(march, finance, team_lead, viewer,
                                                                 django_capture_on_commit_callbacks):
    StatementRecipient.objects.create(email="ap@example.com", team=Team.objects.get(name="B"))
    StatementRecipient.objects.create(user=team_lead, enabled=False)          # the lead opts out
    StatementRecipient.objects.create(user=viewer)                            # a viewer sees no money
    close_march(finance, django_capture_on_commit_callbacks)
    messages = sent_to()
    assert set(messages) == {"finance@example.com", "ap@example.com"}
    assert attached_by_team(messages["ap@example.com"]) == ([("B", "USD", 5.94)], {"USD": 5.94})  # 3.60 + 2.34: B 5.945 on the statement rounded once
    refused = StatementDelivery.objects.get(email="viewer@example.com")
    assert (refused.status, refused.error) == ("failed", "viewer may not see money figures")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]        # closed again: connecting is refused


def test_a_failed_send_keeps_the_close_and_is_sent_by_repeating_the_task(march, finance, settings,
                                                                         django_capture_on_commit_callbacks):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", free_port()
    bp = close_march(finance, django_capture_on_commit_callbacks)
    assert BillingPeriod.objects.get(period="2026-03").is_closed
    failed = StatementDelivery.objects.order_by("email")
    assert [(d.email, d.status, d.attempts) for d in failed] == [("finance@example.com", "failed", 1),
                                                                ("lead@example.com", "failed", 1)]
    assert all("ConnectionRefusedError" in d.error for d in failed)

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    send_statements.delay("2026-03", "close", bp.closed_at.isoformat())
    assert sorted(m.to[0] for m in mail.outbox) == ["finance@example.com", "lead@example.com"]
    assert [(d.status, d.attempts, d.error) for d in StatementDelivery.objects.all()] == [("sent", 2, "")] * 2
    send_statements.delay("2026-03", "close", bp.closed_at.isoformat())       # safe to repeat: nothing new
    assert len(mail.outbox) == 2


def test_the_close_queues_the_mail_on_commit_only(march, finance, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        do_close_period("2026-03", actor=finance)
        assert not mail.outbox and not StatementDelivery.objects.exists()
    assert len(callbacks) == 1 and not mail.outbox
    callbacks[0]()
    assert len(mail.outbox) == 2
    with django_capture_on_commit_callbacks() as callbacks:
        with pytest.raises(ActionError):
            do_close_period("2026-03", actor=finance)       # refused: nothing to announce
    assert callbacks == []


def test_a_failing_receiver_neither_undoes_the_close_nor_stops_the_mail(march, finance,
                                                                          django_capture_on_commit_callbacks):
    def broken(**kwargs):
        raise RuntimeError("a subscriber that fails")

    period_closed.connect(broken, dispatch_uid="test.broken")
    try:
        close_march(finance, django_capture_on_commit_callbacks)
    finally:
        period_closed.disconnect(dispatch_uid="test.broken")
    assert BillingPeriod.objects.get(period="2026-03").is_closed and len(mail.outbox) == 2


def test_a_month_reopened_since_is_not_sent(march, finance, admin_user, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        do_close_period("2026-03", actor=finance)
    do_reopen_period("2026-03", admin_user)
    callbacks[0]()
    assert mail.outbox == [] and not StatementDelivery.objects.exists()


def test_month_to_date_on_the_schedule(march, finance, team_lead):
    """This month so far: 2 h of ml at the rate in force since 16 March, 2.50 -> 5.00 USD."""
    now = timezone.now()
    make_usage(make_device(Cluster.objects.get(name="prod")), "ml", utc(now.year, now.month, 1, 12), hours=2)
    send_month_to_date_statements.delay()
    messages = sent_to()
    period = f"{now:%Y-%m}"
    assert messages["lead@example.com"].subject == f"[gpuportal] Chargeback statement {period} (month to date)"
    [(_, content, _)] = messages["lead@example.com"].attachments
    rows, totals = table(read_book(content)["By team"])
    assert [(r["Team"], r["Currency"], r["Cost"]) for r in rows] == [("A", "USD", 5)] and totals == {"USD": 5}
    assert {d.edition for d in StatementDelivery.objects.all()} == {now.date().isoformat()}
    send_month_to_date_statements.delay()                      # the same day again: nothing new
    assert len(mail.outbox) == 2


def test_recipients_are_managed_in_the_admin_and_audited(march, admin_user, client):
    admin_user.is_staff = admin_user.is_superuser = True
    admin_user.save()
    client.force_login(admin_user)
    page = client.get("/admin/reports/statementrecipient/").content.decode()
    assert "The next statement goes to: finance@example.com (all teams); lead@example.com (A)" in page
    response = client.post("/admin/reports/statementrecipient/add/", {
        "email": "ap@example.com", "team": Team.objects.get(name="B").pk, "enabled": "on"})
    assert response.status_code == 302
    event = AuditEvent.objects.get(action="statement_recipient.create")
    assert (event.actor, event.new_value) == (admin_user, {"user": None, "email": "ap@example.com", "team": "B",
                                                            "enabled": True})
    both = client.post("/admin/reports/statementrecipient/add/", {"email": "x@example.com", "user": admin_user.pk})
    assert both.status_code == 200 and "give either a user or an e-mail address" in both.content.decode()
    assert client.get("/admin/reports/statementdelivery/").status_code == 200


def test_a_bad_statement_schedule_stops_start_up():
    env = dict(os.environ, STATEMENT_SCHEDULE="every monday", DJANGO_SETTINGS_MODULE="gpuportal.settings")
    result = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "STATEMENT_SCHEDULE='every monday' is not a cron line like '0 7 * * 1'" in result.stderr
