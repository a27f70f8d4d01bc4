"""The stored answers' inputs are declared once (apps/accounting/stored/inputs.py): computing any
part of a month's answer reads only declared tables, and the database's triggers are exactly the
declared ones (docs/performance.md, "Stored month answers")."""
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounting.actions.periods import do_close_period
from apps.accounting.stored.inputs import ALWAYS, DATED, UNDATED, input_tables, sync_triggers
from apps.accounting.ledger.daily_money import focus_month
from apps.accounting.ledger.answer import month_lines, own_days, window_cells
from apps.accounting.ledger.statements import compute_open, statement
from apps.accounting.usage.cells import UsageFilter

from tests.support.factories import label_namespace, make_cluster, make_device, make_namespace, make_pool, make_rate, make_usage, \
    utc

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="stored answers and their triggers are Postgres only")]

TABLE = re.compile(r'(?:FROM|JOIN)\s+"(\w+)"', re.IGNORECASE)


def tables_read(work) -> set[str]:
    with CaptureQueriesContext(connection) as queries:
        work()
    return {t for q in queries.captured_queries for t in TABLE.findall(q["sql"])}


def test_computing_a_month_reads_only_declared_inputs(finance):
    prod = make_cluster()
    ml = make_namespace(prod, "ml", "A")
    label_namespace(ml, "B", since=utc(2026, 3, 15))
    make_pool(prod, "spot-*", "spot")
    make_rate(hourly_rate="2.00")
    make_usage(make_device(prod, host="spot-1"), "ml", utc(2026, 3, 2), hours=3)
    make_usage(make_device(prod), "ml", utc(2026, 4, 2), hours=2)
    do_close_period("2026-03", actor=finance)
    make_usage(make_device(prod, host="late-1"), "ml", utc(2026, 3, 20), hours=1)

    def every_part():
        month_lines("2026-04")
        own_days("2026-04")
        compute_open("2026-04", for_closing=True)
        statement("2026-03")
        focus_month("2026-03")
        focus_month("2026-04")
        window_cells(UsageFilter(start=utc(2026, 4, 1), end=utc(2026, 5, 1)))

    read = tables_read(every_part)
    assert "accounting_usagehour" in read                       # the capture sees the real reads
    assert read - input_tables() == set(), "read by an answer but not declared in answer_inputs.py"


def test_the_triggers_are_the_declared_ones():
    sync_triggers(connection)
    sync_triggers(connection)                                   # idempotent
    with connection.cursor() as cur:
        cur.execute("SELECT DISTINCT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                    "WHERE NOT t.tgisinternal AND t.tgfoid IN ('accounting_log_dated'::regproc, "
                    "'accounting_log_undated'::regproc)")
        logged = {row[0] for row in cur.fetchall()}
    assert logged == set(DATED) | set(UNDATED) | set(ALWAYS)
