"""Closing a month while an ingest commits: the statement and its frozen baseline come from one
read of one snapshot, so hours committed during the close are in neither, and the next month's
adjustment lines carry exactly those hours (docs/figures.md, "Closing a month").

The ingest here is real: a second database connection, in a thread, inserts and commits usage
rows in the middle of `do_close_period` (between its first read of usage and the rest).
"""
from math import fsum

import pytest
from django.db.models import Q

from apps.accounting.actions import periods as actions
from apps.accounting.ledger import answer as months
from apps.accounting.actions.periods import do_close_period
from apps.accounting.ledger.frozen import frozen_cells
from apps.accounting.models import BillingPeriod
from apps.accounting.ledger.statements import statement
from apps.reports.statement_rows import statement_payload

from tests.support.factories import in_thread, make_cluster, make_device, make_namespace, make_rate, make_usage, utc

# real commits, seen by other connections; Postgres's isolation levels
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def committed_elsewhere(work):
    """Run `work` on another connection (a thread has its own) in autocommit: its rows are
    committed when this returns."""
    thread, _, errors = in_thread(work)
    thread.join()
    if errors:
        raise errors[0]


def ingest_during_close(monkeypatch, work):
    """Commit `work` from another connection right after the close's first read of usage: a
    month with nothing stored is frozen by the database (`usage.cells.fixed_day_cells` reads the
    cells it cannot freeze itself), one with stored day parts has its stale days read
    (`ledger.answer.month_cells`)."""
    calls = []

    def after(original):
        def read(*args, **kwargs):
            out = original(*args, **kwargs)
            if not calls:
                committed_elsewhere(work)
            calls.append(args)
            return out
        return read

    monkeypatch.setattr(actions, "fixed_day_cells", after(actions.fixed_day_cells))
    monkeypatch.setattr(months, "month_cells", after(months.month_cells))
    return calls


def team_rows(period):
    payload = statement_payload(statement(period), "team", None)
    return {r["key"]: r for r in payload["results"]}


def adjustments(row):
    return [(line["adjusts_period"], line["allocated_gpu_hours"], line["cost"])
            for line in row["lines"] if line["kind"] == "adjustment"]


def frozen_seconds(period, booked_in=None):
    bp = BillingPeriod.objects.get(period=period)
    where = Q(period=bp, booked_in=BillingPeriod.objects.get(period=booked_in or period))
    return fsum(cell.gpu_seconds for _, _, cell in frozen_cells(where))


@pytest.fixture
def fleet():
    """Team A's namespace ml on one H100 at 2.00 per GPU-hour."""
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00")
    return make_device(prod)


def test_hours_committed_during_the_close_are_billed_next_month(fleet, monkeypatch):
    gpu = fleet
    make_usage(gpu, "ml", utc(2026, 3, 10), hours=10)             # 10 GPU-hours: 20.00
    calls = ingest_during_close(monkeypatch, lambda: make_usage(gpu, "ml", utc(2026, 3, 31, 20), hours=2,
                                                               pod="late"))
    do_close_period("2026-03")
    monkeypatch.undo()
    assert calls, "the hook never ran: the close no longer reads usage through month_cells"

    march = team_rows("2026-03")["A"]
    assert (march["allocated_gpu_hours"], march["cost"]) == (10.0, "20.00")
    # The baseline later data is measured against holds exactly the hours the statement bills.
    assert frozen_seconds("2026-03") == 10 * 3600.0
    assert fsum(float(line.allocated_gpu_seconds) for line in statement("2026-03").lines) == 10 * 3600.0

    # The 2 late GPU-hours (committed mid-close) are April's adjustment: 2 h × 2.00 = 4.00.
    april = team_rows("2026-04")["A"]
    assert adjustments(april) == [("2026-03", 2.0, "4.00")]
    assert (april["allocated_gpu_hours"], april["cost"]) == (0.0, "4.00")

    do_close_period("2026-04")             # booked: nothing is left over for May
    assert team_rows("2026-05") == {}
    assert frozen_seconds("2026-03", booked_in="2026-04") == 2 * 3600.0


def test_the_close_reads_one_snapshot(fleet, monkeypatch):
    """February is closed; while March closes, an ingest commits an hour for February and two
    for March. March's close saw neither (its February check ran on the same snapshot as its
    own usage), so April's adjustments carry all three hours."""
    gpu = fleet
    make_usage(gpu, "ml", utc(2026, 2, 10), hours=4)              # February: 4 h, 8.00
    do_close_period("2026-02")
    make_usage(gpu, "ml", utc(2026, 3, 10), hours=10)             # March: 10 h, 20.00

    def late():
        make_usage(gpu, "ml", utc(2026, 2, 28, 10), hours=1, pod="late-feb")
        make_usage(gpu, "ml", utc(2026, 3, 31, 20), hours=2, pod="late-mar")

    ingest_during_close(monkeypatch, late)
    do_close_period("2026-03")
    monkeypatch.undo()

    march = team_rows("2026-03")["A"]
    assert adjustments(march) == []
    assert (march["allocated_gpu_hours"], march["cost"]) == (10.0, "20.00")
    assert frozen_seconds("2026-03") == 10 * 3600.0

    april = team_rows("2026-04")["A"]
    assert adjustments(april) == [("2026-02", 1.0, "2.00"), ("2026-03", 2.0, "4.00")]
    assert april["cost"] == "6.00"


def test_a_close_that_loses_a_race_with_another_close_is_refused(fleet, monkeypatch):
    """Two people close March at once. The second has taken its snapshot when the first
    commits: it is refused with a message instead of freezing the month twice."""
    from apps.accounting.actions import periods as actions

    make_usage(fleet, "ml", utc(2026, 3, 10), hours=10)
    original = actions._lock_period
    raced = []

    def lock_after_the_other_close(period):
        if not raced:
            raced.append(BillingPeriod.objects.get(period=period).is_closed)   # our snapshot starts here
            committed_elsewhere(lambda: do_close_period(period))
        return original(period)

    monkeypatch.setattr(actions, "_lock_period", lock_after_the_other_close)
    with pytest.raises(actions.ActionError, match="closed or reopened by someone else"):
        do_close_period("2026-03")
    assert raced == [False]
    assert team_rows("2026-03")["A"]["cost"] == "20.00"
    assert BillingPeriod.objects.get(period="2026-03").lines.count() == 1


def lines_read_beside(monkeypatch):
    """Record where the close's read of the month's stored lines ran and what it found."""
    import threading

    from apps.accounting.ledger import statements

    seen = []
    original = statements.stored_own_lines

    def recorded(*args):
        found = original(*args)
        seen.append((threading.current_thread().name.startswith("snapshot"), found is not None))
        return found
    monkeypatch.setattr(statements, "stored_own_lines", recorded)
    return seen


def test_a_prepared_month_reads_its_stored_lines_beside_the_freeze(fleet, monkeypatch):
    """The worker kept March current: the close reads the stored lines on a second connection in
    its snapshot while it copies the stored days; the statement is the one computed afresh."""
    from apps.accounting.ledger.statements import compute_open

    make_usage(fleet, "ml", utc(2026, 3, 10), hours=10)           # 10 GPU-hours: 20.00
    months.prepare_month("2026-03")
    def shown(lines):
        return [(x.kind, x.team, x.hourly_rate, x.allocated_gpu_seconds, x.used_gpu_seconds, x.cost) for x in lines]
    expected = shown(compute_open("2026-03", for_closing=True).lines)
    seen = lines_read_beside(monkeypatch)
    do_close_period("2026-03")
    assert seen == [(True, True)]
    assert shown(statement("2026-03").lines) == expected
    assert team_rows("2026-03")["A"]["cost"] == "20.00" and frozen_seconds("2026-03") == 10 * 3600.0


def test_stale_stored_lines_are_computed_by_the_close_itself(fleet, monkeypatch):
    """March's days are stored and current but its lines are not (dropped here, as a rate edit
    leaves them until the worker runs): the second connection finds none, and the close
    computes and prices them on its own connection."""
    from apps.accounting.models import MonthAnswer

    make_usage(fleet, "ml", utc(2026, 3, 10), hours=10)
    months.prepare_month("2026-03")
    MonthAnswer.objects.filter(period="2026-03", part=MonthAnswer.LINES).delete()
    seen = lines_read_beside(monkeypatch)
    do_close_period("2026-03")
    assert seen == [(True, False)]
    assert team_rows("2026-03")["A"]["cost"] == "20.00" and frozen_seconds("2026-03") == 10 * 3600.0
