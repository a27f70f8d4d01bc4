"""Redis away (cache and Celery broker): reads keep working, writes commit with their follow-up
work done, and /healthz names what is down (docs/security.md, "Redis away").

The portal runs in a subprocess whose REDIS_URL points at a loopback port nothing listens on
(cache, throttling and the broker all behind it, as deployed), against this test's database."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from apps.accounting.models import BillingPeriod, Rate
from apps.reports.models import StatementDelivery
from tests.support.factories import make_user, two_teams_in_march

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)

PROBE = """
import json, django
django.setup()
from django.contrib.auth.models import User
from django.test import Client
def client(name):
    c = Client(raise_request_exception=False)
    c.force_login(User.objects.get(username=name))
    return c
finance, admin = client("finance"), client("root")
out = {}
from django.test.utils import setup_test_environment
setup_test_environment()          # the locmem mail outbox
out["usage"] = finance.get("/api/v1/usage/", {"start": "2026-03-01", "end": "2026-04-01", "group_by": "team"}).status_code
chargeback = finance.get("/api/v1/chargeback/", {"period": "2026-03"})
out["chargeback"] = [chargeback.status_code, chargeback.json().get("total_cost") if chargeback.status_code == 200 else None]
out["page"] = finance.get("/chargeback/", {"period": "2026-03"}).status_code
out["rate"] = admin.patch("/api/v1/rates/%d/", json.dumps({"hourly_rate": "3.00"}), content_type="application/json").status_code
import time
started = time.monotonic()
out["close"] = finance.post("/api/v1/chargeback/close/", {"period": "2026-03"}).status_code
out["close_seconds"] = time.monotonic() - started
from django.core import mail
out["mail"] = [m.to for m in mail.outbox]
again = finance.get("/api/v1/chargeback/", {"period": "2026-03"})
out["after"] = [again.status_code, again.json().get("closed") if again.status_code == 200 else None]
health = Client().get("/healthz")
out["healthz"] = [health.status_code, health.json()]
metrics = Client().get("/metrics").content.decode()
out["metrics"] = [line for line in metrics.splitlines() if line.startswith("gpuportal_dependency_errors_total")]
print(json.dumps(out))
"""


def closed_port() -> int:
    with socket.socket() as s:          # bound and closed again: nothing listens there now
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_reads_and_writes_with_redis_away():
    world = two_teams_in_march()
    finance = make_user("finance", "finance")
    finance.email = "finance@example.com"
    finance.save()
    make_user("root", superuser=True)
    rate = world["rate"]
    env = dict(os.environ, DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{connection.settings_dict['NAME']}",
               REDIS_URL=f"redis://127.0.0.1:{closed_port()}/0", DEBUG="true", LOG_LEVEL="WARNING", ALLOWED_HOSTS="testserver",
               DJANGO_SETTINGS_MODULE="gpuportal.settings")
    result = subprocess.run([sys.executable, "-c", PROBE % rate.pk], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["usage"] == 200, result.stderr[-3000:]
    assert out["chargeback"][0] == 200 and out["page"] == 200, result.stderr[-3000:]
    assert out["rate"] == 200, result.stderr[-3000:]
    assert out["close"] == 200, result.stderr[-3000:]
    assert out["after"] == [200, True]
    assert out["close_seconds"] < 10
    # the close's follow-up ran although it could not be queued: the statement went out
    assert out["mail"] == [["finance@example.com"]]
    assert StatementDelivery.objects.get(period="2026-03", email="finance@example.com").status == "sent"
    # the rate edit and the close committed, whole
    assert Rate.objects.get(pk=rate.pk).hourly_rate == 3
    assert BillingPeriod.objects.get(period="2026-03").closed_at is not None
    # worked around, and said so: counted per dependency on /metrics, and logged
    counted = {line.split('"')[1]: float(line.split()[-1]) for line in out["metrics"]}
    assert counted["cache"] >= 5 and counted["broker"] == 1, out["metrics"]
    assert "cache (Redis) unavailable, answering as an empty cache" in result.stderr
    assert "Celery broker unavailable" in result.stderr and "running apps.reports.tasks.send_statements here" in result.stderr
    status, body = out["healthz"]
    assert status == 503 and body["database"] == "ok" and body["redis"].startswith("error: ")
