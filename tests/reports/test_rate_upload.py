"""Rates from the browser (#26): an admin uploads a rate-card CSV at /admin-tools/rates/ with
the same all-or-nothing parse, per-line errors and audit row as `manage.py import_rates`
(both call `actions.rates.do_import_rate_file`). Before: rates could be imported only from the
command line.

Since issue 42 a worker imports the file (`tasks.import_rate_file`, eager here as in the demo)
and the upload answers with the import's own page: its progress, then its result."""
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.accounting.models import Rate, RateImport
from apps.teams.models import AuditEvent

from tests.support.factories import H100, make_rate, make_user

pytestmark = pytest.mark.django_db
HEADER = "gpu_model,mig_profile,hourly_rate,currency,effective_from\n"


def signed_in(client, role):
    user = make_user(role, role)
    client.force_login(user)
    return user


def upload(client, text, name="rates.csv"):
    data = text.encode("utf-8") if isinstance(text, str) else text
    return client.post("/admin-tools/rates/", {"file": SimpleUploadedFile(name, data, "text/csv")}, follow=True)


def test_an_admin_imports_a_good_file_audited(client):
    admin = signed_in(client, "admin")
    assert client.get("/admin-tools/rates/").status_code == 200
    response = upload(client, HEADER + f"{H100},,2.50,usd,2026-01-01\n{H100},1g.10gb,0.40,USD,2026-01-01\n")
    job = RateImport.objects.get()
    assert response.redirect_chain == [(f"/admin-tools/rates/imports/{job.pk}/", 302)]
    assert response.status_code == 200
    assert "Imported 2 rates from rates.csv." in response.content.decode()
    assert (job.status, job.imported, job.lines_total, job.data) == ("imported", 2, 2, None)   # the file dropped
    assert sorted(Rate.objects.values_list("mig_profile", "hourly_rate", "currency")) == [
        ("", Decimal("2.5"), "USD"), ("1g.10gb", Decimal("0.4"), "USD")]
    event = AuditEvent.objects.get(action="rates.import")
    assert (event.actor, event.target, len(event.new_value)) == (admin, "upload rates.csv", 2)


def test_a_bad_file_imports_nothing_and_names_each_line(client):
    signed_in(client, "admin")
    make_rate(H100, "2.00", currency="USD")
    response = upload(client, HEADER + f"{H100},,2.50,USD,2026-02-01\n{H100},,abc,USD,2026-03-01\n"
                              f"{H100},,2.50,USD,2026-01-01\n")
    body = response.content.decode()
    assert response.status_code == 200 and "Nothing imported." in body and 'data-status="refused"' in body
    assert "line 3: hourly_rate &#x27;abc&#x27; is not a number" in body
    assert "line 4: a rate for NVIDIA H100 80GB HBM3 (whole GPU) on_demand from 2026-01-01 already exists" in body
    assert Rate.objects.count() == 1 and not AuditEvent.objects.filter(action="rates.import").exists()
    response = upload(client, b"\xff\xfe" + HEADER.encode("utf-16-le"))
    assert "not UTF-8 text" in response.content.decode()
    assert list(RateImport.objects.values_list("status", flat=True)) == ["refused", "refused"]
    assert client.post("/admin-tools/rates/", {}).status_code == 400


@pytest.mark.parametrize("role", ["viewer", "team_lead", "finance"])
def test_only_admins_may_upload(client, role):
    signed_in(client, role)
    assert client.post("/admin-tools/rates/", {"file": SimpleUploadedFile("r.csv", (HEADER + f"{H100},,1,USD,2026-01-01\n").encode())}).status_code == 403
    assert Rate.objects.count() == 0


def test_22000_lines_import_in_one_bulk_write_audited_once(client, django_assert_max_num_queries, capsys):
    """A 1 MB upload could not finish: 2,000 lines took 12.1 s (a full_clean() and save() per
    row, two queries each and more), ~22k lines hit gunicorn's 120 s timeout (issue 42). Now the
    file is checked in memory and written with one bulk insert of the rates and one of their
    history, in one transaction: the queries do not grow with the lines (the import's page is
    told its progress at most ten times, whatever the length)."""
    import time
    admin = signed_in(client, "admin")
    lines = [f"M{i // 20:04d},,{1 + i % 7}.25,USD,2026-{1 + i % 12:02d}-{1 + (i // 12) % 20:02d}" for i in range(22_000)]
    text = HEADER + "\n".join(lines) + "\n"
    assert len(text.encode()) < 1024 * 1024 and len(set(lines)) == 22_000
    started = time.perf_counter()
    with django_assert_max_num_queries(40):
        response = upload(client, text, name="big.csv")
    took = time.perf_counter() - started
    with capsys.disabled():
        print(f"\n22,000 rate lines uploaded and stored in {took:.1f} s")
    assert response.status_code == 200 and "Imported 22000 rates from big.csv." in response.content.decode()
    assert Rate.objects.count() == 22_000 and Rate.history.filter(history_user=admin).count() == 22_000
    # line i = 13: model 13 // 20 = M0000, month 1 + 13 % 12 = 2, day 1 + 13 // 12 = 2, rate 1 + 13 % 7 = 7.25
    assert Rate.objects.get(gpu_model="M0000", effective_from="2026-02-02").hourly_rate == Decimal("7.25")
    event = AuditEvent.objects.get(action="rates.import")
    assert (event.target, len(event.new_value)) == ("upload big.csv", 22_000)
