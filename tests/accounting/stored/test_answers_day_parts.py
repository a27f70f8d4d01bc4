"""A month's stored answer is a merge of per-day parts (docs/performance.md, "Per-day parts"):
after each kind of write the on-commit task recomputes the parts it touched and no others —
an hour of usage its day, a rate edit no day (only the lines), a node pool or a namespace move
every day (they may change any day) — without anyone reading; and a read while the worker
recomputes waits for it instead of serving the old figure. Celery runs eagerly here (no
REDIS_URL), so the task queued on commit runs at the commit."""
from collections import Counter
from datetime import date
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounting.stored import answers
from apps.accounting.ledger import answer as months
from apps.accounting.stored import rows as stored_rows
from apps.accounting.stored.provenance import computed_on_read, recomputed
from apps.accounting.actions.namespaces import do_assign_namespace
from apps.accounting.actions.periods import do_close_period, do_reopen_period
from apps.accounting.actions.rates import do_save_rate
from apps.accounting.stored.versions import read_inputs, stored_answers
from apps.accounting.core.periods import period_bounds
from apps.accounting.models import MonthAnswer
from apps.accounting.ledger.answer import month_lines, own_cells, prune_closed_months
from apps.accounting.ledger.statements import compute_open
from apps.accounting.tasks import prepare_month_answers
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.usage.cells import UsageFilter, usage_cells
from apps.teams.models import Namespace

from tests.support.factories import in_thread, make_cluster, make_device, make_namespace, make_pool, make_rate, make_team, \
    make_usage, utc

pytestmark = [pytest.mark.postgres]
MARCH, FEBRUARY = "2026-03", "2026-02"
EVERY_MARCH_DAY = {f"day{d:02d}" for d in range(1, 32)}


def days_recomputed(before: Counter, period=MARCH) -> set[str]:
    """The day parts of `period` computed since `before` (a copy of `recomputed`)."""
    return {part for (p, part), n in (recomputed - before).items() if p == period and part.startswith("day")}


def parts_recomputed(before: Counter, period=MARCH) -> Counter:
    return Counter({part: n for (p, part), n in (recomputed - before).items() if p == period})


def current(period=MARCH) -> bool:
    inputs = read_inputs([period])
    stored = MonthAnswer.objects.filter(period=period, part=MonthAnswer.LINES).values_list("version", flat=True)
    return list(stored) == [inputs.lines(period)]


def allocated_hours(lines):
    return sum(float(x.allocated_gpu_seconds) for x in lines if x.kind == "usage") / 3600


@pytest.fixture
def march(db, django_capture_on_commit_callbacks, monkeypatch):
    """Team A's namespace ml on one H100 at 2.00: 2 h on March 2, 3 h on the 10th, 4 h on the 20th
    (9 h), stored by the worker; "now" is April 10, so March is last month."""
    assert stored_answers()
    monkeypatch.setattr("apps.accounting.tasks.timezone.now", lambda: utc(2026, 4, 10))
    with django_capture_on_commit_callbacks(execute=True):
        prod = make_cluster()
        make_namespace(prod, "ml", "A")
        rate = make_rate(hourly_rate="2.00")
        gpu = make_device(prod, host="gpu-1")
        for day, hours in ((2, 2), (10, 3), (20, 4)):
            make_usage(gpu, "ml", utc(2026, 3, day), hours=hours)
    assert current()
    assert allocated_hours(month_lines(MARCH)) == 9.0
    return prod, rate, gpu


def test_an_hour_of_usage_recomputes_its_day_only(march, django_capture_on_commit_callbacks):
    prod, rate, gpu = march
    before = recomputed.copy()
    with django_capture_on_commit_callbacks(execute=True):
        make_usage(gpu, "ml", utc(2026, 3, 10, 5), pod="next")       # what an hourly ingest writes
        assert not current()
    assert days_recomputed(before) == {"day10"}                       # not the other 30 days
    assert parts_recomputed(before) == Counter({"day10": 1, "cells": 1, "lines": 1})
    assert current()
    seen = recomputed.copy()
    with CaptureQueriesContext(connection) as reads:
        lines = month_lines(MARCH)
    assert recomputed == seen                                 # the read computed nothing
    assert not any('"accounting_usagehour"' in q["sql"] for q in reads.captured_queries)
    assert allocated_hours(lines) == 10.0                             # 9 h + 1 h: 20.00
    assert lines == compute_open(MARCH).lines
    start, end = period_bounds(MARCH, billing_zone())
    assert sorted(own_cells(MARCH), key=repr) == sorted(usage_cells(UsageFilter(start, end), per_day=False), key=repr)


def test_a_rate_edit_recomputes_the_lines_from_the_stored_days(march, admin_user, django_capture_on_commit_callbacks):
    prod, rate, gpu = march
    before = recomputed.copy()
    with django_capture_on_commit_callbacks(execute=True):
        rate.hourly_rate = Decimal("3.00")
        do_save_rate(admin_user, rate)
    assert parts_recomputed(before) == Counter({"lines": 1})          # no day, not even the cells
    assert current()
    assert sum(line.cost for line in month_lines(MARCH)) == Decimal("27")   # 9 h × 3.00


@pytest.mark.parametrize("write", ["node pool", "namespace move"])
def test_a_mapping_change_recomputes_every_day(march, write, admin_user, django_capture_on_commit_callbacks):
    """A node pool or a namespace move is logged without a date: it may change any day."""
    prod, rate, gpu = march
    before = recomputed.copy()
    with django_capture_on_commit_callbacks(execute=True):
        if write == "node pool":
            make_pool(prod, "gpu-*", "spot")
        else:
            do_assign_namespace(Namespace.objects.get(name="ml"), make_team("B"), date(2026, 3, 15), actor=admin_user)
    assert days_recomputed(before) == EVERY_MARCH_DAY
    assert current()
    lines = month_lines(MARCH)
    assert lines == compute_open(MARCH).lines
    if write == "namespace move":       # the 20th's 4 h are B's from the 15th on
        assert {line.team: allocated_hours([line]) for line in lines} == {"A": 5.0, "B": 4.0}


def test_close_and_reopen_recompute_what_they_change(march, admin_user, django_capture_on_commit_callbacks):
    prod, rate, gpu = march
    with django_capture_on_commit_callbacks(execute=True):
        make_usage(gpu, "ml", utc(2026, 2, 5), hours=2)
    prepare_month_answers([FEBRUARY])
    before = recomputed.copy()
    with django_capture_on_commit_callbacks(execute=True):
        do_close_period(FEBRUARY, actor=admin_user)
    # March now carries February's late data, stored empty by the close: nothing to recompute.
    assert not days_recomputed(before) and not days_recomputed(before, FEBRUARY)
    assert current()
    assert prune_closed_months() == [FEBRUARY]          # the nightly job drops February's open parts
    assert not MonthAnswer.objects.filter(period=FEBRUARY, part__startswith="day").exists()
    before = recomputed.copy()
    with django_capture_on_commit_callbacks(execute=True):
        do_reopen_period(FEBRUARY, admin_user)
    # Open again: the worker stores February's 28 days and its lines; March's days are untouched.
    assert days_recomputed(before, FEBRUARY) == {f"day{d:02d}" for d in range(1, 29)}
    assert not days_recomputed(before)
    assert current(FEBRUARY)
    assert allocated_hours(month_lines(FEBRUARY)) == 2.0


def test_an_hour_in_a_zone_off_utc_recomputes_the_two_days_its_utc_date_overlaps(db, settings, monkeypatch,
                                                                                  django_capture_on_commit_callbacks):
    """Usage is logged by UTC date: in Asia/Kolkata (UTC+5:30) March 9 UTC runs from 05:30 on the
    9th to 05:30 on the 10th, so an hour on it recomputes the billing days 9 and 10."""
    settings.BILLING_TIMEZONE = "Asia/Kolkata"
    monkeypatch.setattr("apps.accounting.tasks.timezone.now", lambda: utc(2026, 4, 10))
    with django_capture_on_commit_callbacks(execute=True):
        prod = make_cluster()
        make_namespace(prod, "ml", "A")
        make_rate(hourly_rate="2.00")
        gpu = make_device(prod)
        make_usage(gpu, "ml", utc(2026, 3, 2), hours=2)
    before = recomputed.copy()
    with django_capture_on_commit_callbacks(execute=True):
        make_usage(gpu, "ml", utc(2026, 3, 9, 20), pod="late")       # 01:30 on the 10th in Kolkata
    assert days_recomputed(before) == {"day09", "day10"}
    assert allocated_hours(month_lines(MARCH)) == 3.0


@pytest.mark.django_db(transaction=True)
def test_a_read_while_the_worker_recomputes_waits_for_it(monkeypatch):
    """Real commits on other connections: an hour is committed (nobody has recomputed March
    yet); the worker starts recomputing and is held inside; a reader asks for March meanwhile.
    The reader neither serves the stored 10 h nor computes itself: it waits for the worker and
    shows 11 h."""
    import threading

    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00")
    gpu = make_device(prod)
    make_usage(gpu, "ml", utc(2026, 3, 2), hours=10)
    assert allocated_hours(month_lines(MARCH)) == 10.0               # stored: 10 h
    make_usage(gpu, "ml", utc(2026, 3, 20), pod="late")              # committed; March is stale now

    computing, go = threading.Event(), threading.Event()
    original = months.month_cells

    def held(*args, **kwargs):
        cells = original(*args, **kwargs)
        computing.set()
        assert go.wait(30)
        return cells

    monkeypatch.setattr(months, "month_cells", held)
    worker = in_thread(lambda: prepare_month_answers([MARCH]))
    assert computing.wait(30)

    def read():
        with computed_on_read() as seen:
            return month_lines(MARCH), list(seen)

    reader = in_thread(read)
    reader[0].join(1.0)
    assert reader[0].is_alive()                                      # not served the stored 10 h: waiting
    go.set()
    for thread, _, errors in (worker, reader):
        thread.join(30)
        assert not errors
    lines, computed = reader[1][0]
    assert allocated_hours(lines) == 11.0
    assert computed == []                                            # the worker's answer, not its own
    monkeypatch.undo()
    assert lines == compute_open(MARCH).lines


def test_a_read_that_computes_says_so(db, finance):
    """No worker ran (the write's task never fires inside this test's transaction): the first
    read computes March itself and says so in a header and on the page; the next reads are
    served stored and say nothing."""
    from django.test import Client

    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00")
    make_usage(make_device(prod), "ml", utc(2026, 3, 2), hours=3)     # A: 3 h × 2.00 = 6.00
    c = Client()
    c.force_login(finance)
    first = c.get("/api/v1/chargeback/", {"period": MARCH, "group_by": "team"})
    assert first["X-Answer-Computed"] == "on-read"
    assert first.json()["totals_by_currency"] == {"USD": "6.00"}
    second = c.get("/api/v1/chargeback/", {"period": MARCH, "group_by": "team"})
    assert not second.has_header("X-Answer-Computed")
    assert second.json()["totals_by_currency"] == {"USD": "6.00"}

    make_usage(make_device(prod, host="node-2"), "ml", utc(2026, 3, 3))   # one more hour: 8.00
    page = c.get("/chargeback/", {"period": MARCH})
    assert page["X-Answer-Computed"] == "on-read"
    assert 'id="computed-on-read"' in page.content.decode() and "$8.00" in page.content.decode()
    again = c.get("/chargeback/", {"period": MARCH})
    assert not again.has_header("X-Answer-Computed") and 'id="computed-on-read"' not in again.content.decode()


def test_what_the_worker_stored_is_served_without_the_header(march, finance):
    from django.test import Client

    c = Client()
    c.force_login(finance)
    response = c.get("/api/v1/chargeback/", {"period": MARCH, "group_by": "team"})
    assert not response.has_header("X-Answer-Computed")
    assert response.json()["totals_by_currency"] == {"USD": "18.00"}       # 9 h × 2.00


def test_the_worker_renders_the_common_bodies_a_read_then_sends_stored(march, finance,
                                                                       django_capture_on_commit_callbacks):
    """After an hour and the worker, the statement by team and by namespace and the usage by
    team are stored at their current versions: the first reads render nothing (no query of the
    rollups), and their bytes are those a read rendering them itself sends."""
    from django.test import Client

    from apps.accounting.models import MonthBody

    prod, rate, gpu = march
    with django_capture_on_commit_callbacks(execute=True):
        make_usage(gpu, "ml", utc(2026, 3, 10, 5), pod="next")          # 10 h × 2.00 = 20.00
    keys = set(MonthBody.objects.filter(period=MARCH).values_list("key", flat=True))
    assert {"chargeback?group_by=team&shared_idle=apart&scope=all",
            "chargeback?group_by=namespace&shared_idle=apart&scope=all",
            "usage?group_by=team&money=all&scope=all"} <= keys
    c = Client()
    c.force_login(finance)
    start, end = period_bounds(MARCH, billing_zone())
    reads = [("/api/v1/chargeback/", {"period": MARCH, "group_by": "team"}),
             ("/api/v1/chargeback/", {"period": MARCH, "group_by": "namespace"}),
             ("/api/v1/usage/", {"start": start.isoformat(), "end": end.isoformat(), "group_by": "team"})]
    stored = []
    for url, params in reads:
        with CaptureQueriesContext(connection) as queries:
            response = c.get(url, params)
        assert response.status_code == 200 and not response.has_header("X-Answer-Computed")
        assert not [q for q in queries.captured_queries if "accounting_usage" in q["sql"]]   # nothing computed
        stored.append(response.content)
    assert b'"USD":"20.00"' in stored[0]
    MonthBody.objects.filter(period=MARCH).delete()                 # rendered by the reads themselves now
    assert [c.get(url, params).content for url, params in reads] == stored


def test_the_database_sums_day_parts_to_the_same_floats_as_the_live_merge(db):
    """Seconds whose float sum depends on the order (0.1 + 0.2 + 0.3 and 1e16 + 1 - 1e16): the
    span cell summed in SQL from stored day parts equals the one merged in Python, to the bit."""
    from apps.accounting.core.lines import Cell
    from apps.accounting.stored.spans import exact_sum, merge_spans

    values = [0.1, 0.2, 0.3, 1e16, 1.0, -1e16, 2.5e-7, 3600.0 / 7]
    cells = [Cell(1, "prod", "ml", "A", "H100", "", date(2026, 3, 1 + i), v, v / 3, 0.0, 0.0, "on-demand")
             for i, v in enumerate(values)]
    ids = answers._store_cells(MARCH, [(f"day{i + 1:02d}", "v", [c], 0.0) for i, c in enumerate(cells)])
    in_sql = stored_rows.merged_day_cells(list(ids.values()), [date(2026, 3, 1)])
    in_python = merge_spans(cells, [date(2026, 3, 1)])
    assert in_sql == in_python
    assert in_sql[0].gpu_seconds == exact_sum(values) == 515.8857145357143   # 0.6 + 1 + 2.5e-7 + 514.2857142857143; in order, floats give 514.28…
