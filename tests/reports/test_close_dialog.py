"""Closing from the chargeback page (#14 P2): only a month that has ended is offered; the
dialog says what closing freezes and what is not in yet (a month without data, clusters whose
ingest is behind, with their watermark); times read in the billing zone, with who closed it.

Before: the open month offered "Close …" (the close then failed), the dialog warned only by
cluster name, never about an empty month, and the closed time showed as a raw ISO string.
"""
import pytest
from django.test import Client
from django.utils import timezone

from apps.accounting.actions.periods import do_close_period
from apps.accounting.models import BillingPeriod

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_usage, utc

pytestmark = pytest.mark.django_db


@pytest.fixture
def berlin(settings):
    settings.BILLING_TIMEZONE = "Europe/Berlin"


def signed_in(user):
    c = Client()
    c.force_login(user)
    return c


def test_the_running_month_is_not_offered_for_closing(finance):
    period = f"{timezone.now():%Y-%m}"
    c = signed_in(finance)
    page = c.get("/chargeback/", {"period": period}).content.decode()
    assert "/chargeback/close/?period=" not in page
    assert f"{period} is still running: it can be closed from" in page
    dialog = c.get("/chargeback/close/", {"period": period}).content.decode().split("<main>")[1]
    assert f"{period} is still running" in dialog and "only a month that has ended can be closed" in dialog
    assert "Yes, close" not in dialog and "csrfmiddlewaretoken" not in dialog


def test_the_dialog_says_what_is_behind_and_what_closing_freezes(finance, berlin):
    prod = make_cluster("prod")
    prod.ingested_until = utc(2026, 3, 31, 20)             # 22:00 CEST, two hours short of April
    prod.save()
    make_cluster("late")                                   # never ingested
    done = make_cluster("done")
    done.ingested_until = utc(2026, 4, 2)
    done.save()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00")
    make_usage(make_device(prod), "ml", utc(2026, 3, 2), hours=617)          # 1,234.00 USD
    body = signed_in(finance).get("/chargeback/close/", {"period": "2026-03"}).content.decode()
    assert "2026-03 runs from 2026-03-01 00:00 CET to 2026-04-01 00:00 CEST (Europe/Berlin)" in body
    assert "The statement as it stands now: $1,234.00" in body
    assert "<li>late: never ingested</li>" in body
    assert "<li>prod: ingested until 2026-03-31 22:00 CEST</li>" in body
    assert "done" not in body.split('id="behind"')[1].split("</div>")[0]
    assert 'id="no-usage"' not in body and "Yes, close 2026-03" in body


def test_the_dialog_warns_of_a_month_without_data(finance):
    make_usage(make_device(make_cluster("prod")), "", utc(2025, 1, 31, 23))    # history begins in January
    body = signed_in(finance).get("/chargeback/close/", {"period": "2025-02"}).content.decode()
    assert "No usage was ingested for 2025-02." in body
    assert "Closing now freezes an empty statement" in body and "Yes, close 2025-02" in body


def test_the_dialog_refuses_a_month_before_the_fleets_history(finance):
    """Nothing ingested ends before February 2025 ends: there is no button to press (the close
    itself refuses it too, tests/accounting/actions/test_periods.py)."""
    c = signed_in(finance)
    body = c.get("/chargeback/close/", {"period": "2025-02"}).content.decode().split("<main>")[1]
    assert "2025-02 ends before the fleet&#x27;s history begins: nothing has been ingested yet" in body
    assert "Yes, close" not in body and "csrfmiddlewaretoken" not in body
    make_usage(make_device(make_cluster("prod")), "", utc(2025, 3, 1))      # 1 March, 00:00 UTC
    body = c.get("/chargeback/close/", {"period": "2025-02"}).content.decode().split("<main>")[1]
    assert "(its first ingested hour: 2025-03-01 00:00 UTC)" in body and "Yes, close" not in body


def test_a_closed_month_says_when_in_local_time_and_by_whom(finance, berlin):
    make_usage(make_device(make_cluster("prod")), "", utc(2026, 3, 2))
    do_close_period("2026-03", actor=finance)
    BillingPeriod.objects.filter(period="2026-03").update(closed_at=utc(2026, 4, 2, 9, 30))
    page = signed_in(finance).get("/chargeback/", {"period": "2026-03"}).content.decode()
    assert "Closed 2026-04-02 11:30 CEST by finance: these figures are frozen" in page
    dialog = signed_in(finance).get("/chargeback/close/", {"period": "2026-03"}).content.decode()
    assert "2026-03 is already closed" in dialog and "Yes, close" not in dialog
