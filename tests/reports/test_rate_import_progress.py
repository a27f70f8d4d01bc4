"""A rate card uploaded from the browser is imported by a worker, and its page says how far the
worker got, then what came of it (docs/chargeback.md, "1. Import rates"). Before, the upload
ran in the request: ~22k lines hit gunicorn's 120 s worker timeout, a 500 and nothing kept.

Through the real views, with Celery eager as in the demo and the tests (the request runs the
task): the write is held on a lock of the rate table so the page can be read mid-import."""
import re
import threading
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connections
from django.test import Client

from apps.accounting.actions.rates import queue_rate_import
from apps.accounting.models import Rate, RateImport
from apps.accounting.tasks import import_rate_file
from apps.teams.models import AuditEvent
from tests.support.factories import H100, make_user
from tests.support.db_locks import table_locked

HEADER = "gpu_model,mig_profile,hourly_rate,currency,effective_from\n"
LINES = 5000


def a_card(lines=LINES) -> bytes:
    # line i: model M<i // 50>, day 2026-01-01 + (i % 50) days: every key different
    return (HEADER + "".join(f"M{i // 50:03d},,2.50,USD,2026-{1 + (i % 50) // 28:02d}-{1 + (i % 50) % 28:02d}\n"
                             for i in range(lines))).encode()


def status_of(body: str) -> str:
    return re.search(r'data-status="(\w+)"', body).group(1)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_import_page_shows_progress_then_the_result():
    admin = make_user("admin", "admin")
    browser, uploader = Client(), Client()
    browser.force_login(admin)
    uploader.force_login(admin)
    answered = []

    def post():
        try:
            answered.append(uploader.post("/admin-tools/rates/", {"file": SimpleUploadedFile("card.csv", a_card())}))
        finally:
            connections.close_all()
    poster = threading.Thread(target=post)
    with table_locked("accounting_rate", "SHARE"):                  # reads pass, inserts wait
        poster.start()
        deadline, seen = time.monotonic() + 60, []
        while True:
            job = RateImport.objects.defer("data").first()
            if job is not None:
                body = browser.get(f"/admin-tools/rates/imports/{job.pk}/").content.decode()
                seen.append(status_of(body))
                if seen[-1] == "writing":
                    break
            assert time.monotonic() < deadline, f"the import never reached its write: {seen}"
            time.sleep(0.05)
        assert f"all {LINES} lines passed; storing them in one transaction" in body
        assert f'<progress id="rate-progress" max="{LINES}" value="{LINES}">' in body
        assert '<meta http-equiv="refresh" content="1">' in body
        assert set(seen) <= {"queued", "checking", "writing"}
        assert not Rate.objects.exists() and not AuditEvent.objects.filter(action="rates.import").exists()
    poster.join()
    (response,) = answered
    assert response.status_code == 302 and response["Location"] == f"/admin-tools/rates/imports/{job.pk}/"
    body = browser.get(response["Location"]).content.decode()
    assert status_of(body) == "imported" and f"Imported {LINES} rates from card.csv." in body
    assert "http-equiv" not in body                                  # done: no more refreshing
    assert Rate.objects.count() == LINES and AuditEvent.objects.filter(action="rates.import").count() == 1
    listing = browser.get("/admin-tools/rates/").content.decode()
    assert f'<a href="/admin-tools/rates/imports/{job.pk}/">card.csv</a>' in listing


@pytest.mark.django_db
def test_a_queued_import_says_so_and_a_task_delivered_twice_imports_once(client):
    admin = make_user("admin", "admin")
    client.force_login(admin)
    job = queue_rate_import((HEADER + f"{H100},,2.50,USD,2026-01-01\n{H100},,2.75,USD,2026-02-01\n").encode(),
                            "two.csv", admin)
    body = client.get(f"/admin-tools/rates/imports/{job.pk}/").content.decode()
    assert status_of(body) == "queued" and "Waiting for a worker" in body and 'content="1"' in body
    assert import_rate_file(job.pk) == "imported"
    assert import_rate_file(job.pk) == "imported"                  # redelivered (acks_late): nothing more
    assert Rate.objects.count() == 2 and AuditEvent.objects.filter(action="rates.import").count() == 1
    event = AuditEvent.objects.get(action="rates.import")
    assert (event.actor, event.target) == (admin, "upload two.csv")


@pytest.mark.django_db
def test_a_refused_file_lists_each_reason_and_keeps_nothing(client):
    client.force_login(make_user("admin", "admin"))
    card = HEADER + f"{H100},,2.50,USD,2026-01-01\n{H100},,-1,USD,2026-02-01\n{H100},,2.50,USD,2026-01-01\n"
    response = client.post("/admin-tools/rates/", {"file": SimpleUploadedFile("bad.csv", card.encode())}, follow=True)
    body = response.content.decode()
    assert status_of(body) == "refused" and "Nothing imported." in body
    assert "line 3: hourly_rate &#x27;-1&#x27; is negative" in body
    assert "line 4: duplicate rate for NVIDIA H100 80GB HBM3 (whole GPU) on_demand from 2026-01-01 (also on line 2)" in body
    job = RateImport.objects.get()
    assert (job.status, job.imported, job.data, len(job.errors)) == ("refused", 0, None, 2)
    assert not Rate.objects.exists() and not AuditEvent.objects.filter(action="rates.import").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["viewer", "team_lead", "finance"])
def test_only_admins_see_an_import(client, role):
    job = queue_rate_import(a_card(1), "c.csv", make_user("admin", "admin"))
    client.force_login(make_user(role, role))
    assert client.get(f"/admin-tools/rates/imports/{job.pk}/").status_code == 403
