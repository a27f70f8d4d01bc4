"""Closing a month while an admin reopens the closed month before it (docs/chargeback.md,
"Closing and reopening at the same time"). The close locks the closed months right before the
month it closes, so the two never both win: either the reopen came first and the close is
refused, or the close came first and the reopen waits for it, then is refused because the
close booked that month's late data.

Both sides are real: the reopen runs on a second database connection, in a thread.
"""
import time

import pytest
from django.db import connection

from apps.accounting.actions import periods as actions
from apps.accounting.actions.audit import ActionError
from apps.accounting.actions.periods import do_close_period, do_reopen_period
from apps.accounting.models import BillingPeriod, FrozenDay
from apps.accounting.ledger.statements import statement
from apps.reports.statement_rows import statement_payload

from tests.support.factories import in_thread, make_cluster, make_device, make_namespace, make_rate, make_usage, make_user, utc

pytestmark = pytest.mark.django_db(transaction=True)   # real commits, seen by other connections


def team_rows(period):
    payload = statement_payload(statement(period), "team", None)
    return {r["key"]: (r["allocated_gpu_hours"], r["cost"]) for r in payload["results"]}


def adjustments(period):
    payload = statement_payload(statement(period), "team", None)
    return [(line["adjusts_period"], line["allocated_gpu_hours"], line["cost"])
            for r in payload["results"] for line in r["lines"] if line["kind"] == "adjustment"]


@pytest.fixture
def february_closed_with_late_data():
    """Team A: 4 GPU-hours in February (closed, 8.00), then 1 late February hour (2.00 owed),
    and 10 hours in March (20.00); 2.00 per GPU-hour."""
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00")
    gpu = make_device(prod)
    make_usage(gpu, "ml", utc(2026, 2, 10), hours=4)
    finance, admin = make_user("finance", "finance"), make_user("admin", "admin")
    do_close_period("2026-02", actor=finance)
    make_usage(gpu, "ml", utc(2026, 2, 28, 10), hours=1, pod="late")
    make_usage(gpu, "ml", utc(2026, 3, 10), hours=10)
    return finance, admin


def test_a_reopen_committed_during_the_close_refuses_the_close(february_closed_with_late_data, monkeypatch):
    """The close has read February as closed (its snapshot) when the reopen commits: March's
    close is refused instead of billing February's late hour in March while February, open
    again, bills it too."""
    finance, admin = february_closed_with_late_data
    original = actions._lock_period
    reopened = []

    def reopen_first(period):
        if period == "2026-03" and not reopened:     # the close's lock, not the reopen's
            reopened.append(BillingPeriod.objects.get(period="2026-02").is_closed)   # our snapshot starts here
            thread, out, errors = in_thread(lambda: do_reopen_period("2026-02", actor=admin))
            thread.join()
            assert not errors, errors
            reopened[0] = reopened[0] and out[0].period
        return original(period)

    monkeypatch.setattr(actions, "_lock_period", reopen_first)
    with pytest.raises(ActionError, match="closed or reopened by someone else"):
        do_close_period("2026-03", actor=finance)
    monkeypatch.undo()
    assert reopened == ["2026-02"]   # it was closed in the snapshot, and reopened

    assert not BillingPeriod.objects.get(period="2026-03").is_closed
    assert not FrozenDay.objects.filter(booked_in__period="2026-03").exists()
    assert team_rows("2026-02") == {"A": (5.0, "10.00")}            # live again: 4 + 1 late hour
    do_close_period("2026-03", actor=finance)                       # again, now that it is settled
    assert adjustments("2026-03") == []                            # February's hour is billed once
    assert team_rows("2026-03") == {"A": (10.0, "20.00")}
    do_close_period("2026-02", actor=finance)
    assert team_rows("2026-02") == {"A": (5.0, "10.00")}
    assert adjustments("2026-04") == []


def _blocked_on_a_lock(pid: int) -> bool:
    with connection.cursor() as cur:
        cur.execute("SELECT cardinality(pg_blocking_pids(%s)) > 0", [pid])
        return cur.fetchone()[0]


def test_a_reopen_during_the_close_waits_for_it_and_is_refused(february_closed_with_late_data, monkeypatch):
    """The close holds February's row when the admin reopens February: the reopen waits until
    the close commits, then finds February's late hour booked in March and is refused."""
    finance, admin = february_closed_with_late_data
    original = actions._lock_period
    started = []

    def reopen_while_locked(period):
        bp = original(period)
        if period != "2026-03" or started:           # the reopen's own lock
            return bp
        pid = []

        def reopen():
            with connection.cursor() as cur:
                cur.execute("SELECT pg_backend_pid()")
                pid.append(cur.fetchone()[0])
            return do_reopen_period("2026-02", actor=admin)

        thread, out, errors = in_thread(reopen)
        started.append((thread, out, errors))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and thread.is_alive() and not (pid and _blocked_on_a_lock(pid[0])):
            time.sleep(0.05)
        return bp

    monkeypatch.setattr(actions, "_lock_period", reopen_while_locked)
    do_close_period("2026-03", actor=finance)
    monkeypatch.undo()
    [(thread, out, errors)] = started
    thread.join(30)
    assert not thread.is_alive()
    assert out == [] and len(errors) == 1, (out, errors)
    assert isinstance(errors[0], ActionError)
    assert "booked in the closed period(s) 2026-03" in str(errors[0])

    assert BillingPeriod.objects.get(period="2026-02").is_closed
    assert team_rows("2026-02") == {"A": (4.0, "8.00")}
    assert adjustments("2026-03") == [("2026-02", 1.0, "2.00")]
    assert team_rows("2026-03") == {"A": (10.0, "22.00")}


def test_inside_a_callers_transaction_a_reopen_before_the_lock_refuses_the_close(february_closed_with_late_data,
                                                                                 monkeypatch):
    """A close inside a caller's transaction keeps its isolation (READ COMMITTED): the lock then
    reads February's row as committed, finds it reopened, and refuses the close."""
    from django.db import transaction

    finance, admin = february_closed_with_late_data
    original = actions.closed_before
    reopened = []

    def reopen_after_reading_the_chain(period, closed):
        chain = original(period, closed)
        if period == "2026-03" and not reopened:
            reopened.append(chain)
            thread, _, errors = in_thread(lambda: do_reopen_period("2026-02", actor=admin))
            thread.join()
            assert not errors, errors
        return chain

    monkeypatch.setattr(actions, "closed_before", reopen_after_reading_the_chain)
    with pytest.raises(ActionError, match="2026-02 was reopened by someone else meanwhile; look at 2026-03 again"):
        with transaction.atomic():
            do_close_period("2026-03", actor=finance)
    monkeypatch.undo()
    assert reopened == [["2026-02"]]
    assert not BillingPeriod.objects.get(period="2026-02").is_closed
    assert not BillingPeriod.objects.filter(period="2026-03", closed_at__isnull=False).exists()
    assert not FrozenDay.objects.filter(booked_in__period="2026-03").exists()
