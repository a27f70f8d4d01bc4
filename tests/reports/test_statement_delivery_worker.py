"""End to end on a real Celery worker over the Redis on 127.0.0.1: `manage.py close_period`
commits the close, the task is queued on commit, the worker e-mails the statements through
Django's SMTP backend to a loopback SMTP server, and the attachments read back hold the
hand-computed figures of tests/reports/workbook.py."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from apps.accounting.models import BillingPeriod
from apps.reports.models import StatementDelivery

from tests.support.factories import make_user
from .smtp_sink import smtp_sink
from .workbook import build_march, read_book, table
from tests.support.worker_redis import key_prefix, own_keys

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/11"   # this run's keys carry their own prefix (tests/support/worker_redis.py)


@pytest.fixture
def clean_redis():
    with own_keys(REDIS_URL) as conn:
        yield conn


def env_for(port: int) -> dict:
    name = connection.settings_dict["NAME"]
    return dict(os.environ, DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{name}", REDIS_URL=REDIS_URL,
               REDIS_KEY_PREFIX=key_prefix(),
                EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend", EMAIL_HOST="127.0.0.1",
                EMAIL_PORT=str(port), BILLING_TIMEZONE="UTC", CELERY_WORKER_HIJACK_ROOT_LOGGER="false")


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_close_on_the_command_line_mails_the_statements_from_a_worker(clean_redis, settings):
    settings.BILLING_TIMEZONE = "UTC"
    finance, lead = make_user("finance", "finance"), make_user("team_lead", "team_lead")
    for user, address in ((finance, "finance@example.com"), (lead, "lead@example.com")):
        user.email = address
        user.save()
    build_march(lead, finance)
    with smtp_sink() as (port, messages):
        env = env_for(port)
        worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "gpuportal", "worker", "--pool=solo",
                                   "--loglevel=WARNING", "--without-gossip", "--without-mingle"],
                                  cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            closed = subprocess.run([sys.executable, "manage.py", "close_period", "2026-03", "--user", "finance"],
                                    cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
            assert closed.returncode == 0, closed.stderr
            deadline = time.monotonic() + 120
            while len(messages) < 2 and time.monotonic() < deadline:
                time.sleep(0.5)
            if len(messages) < 2:
                worker.terminate()
                pytest.fail(f"the worker sent {len(messages)} of 2; log:\n{worker.communicate(timeout=10)[0][-3000:]}")
        finally:
            worker.terminate()
            worker.wait(timeout=30)
        by_address = {m["To"]: m for m in messages}
    assert BillingPeriod.objects.get(period="2026-03").is_closed
    assert set(by_address) == {"finance@example.com", "lead@example.com"}
    totals = {}
    for address, message in by_address.items():
        assert message["Subject"] == "[gpuportal] Chargeback statement 2026-03 (closed)"
        [attachment] = [p for p in message.walk() if p.get_filename() == "chargeback-2026-03-statement.xlsx"]
        totals[address] = table(read_book(attachment.get_payload(decode=True))["By team"])[1]
    assert totals == {"finance@example.com": {"JPY": 450, "USD": 38.74}, "lead@example.com": {"JPY": 450, "USD": 30.45}}
    # (February's close in build_march mailed its own statement, in this process)
    assert sorted(StatementDelivery.objects.filter(period="2026-03").values_list("email", "status")) == [
        ("finance@example.com", "sent"), ("lead@example.com", "sent")]
