"""Closing a month with nothing stored: the database freezes the cells of the namespaces whose team
cannot change (`usage.cells.fixed_day_cells`), the rest come through Python, and the lines are priced
from the frozen cells' spans (`actions.periods.freeze_month`). The frozen cells must be the month's
per-day cells exactly, and the lines those of a close from stored parts (docs/performance.md,
"Bulk writes")."""
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.db.models import Q

from apps.accounting.usage import cells as usage
from apps.accounting.actions.periods import do_close_period, do_reopen_period
from apps.accounting.core.periods import period_bounds
from apps.accounting.usage.daily import rebuild_days
from apps.accounting.ledger.frozen import frozen_cells
from apps.accounting.models import MonthAnswer, StatementLine
from apps.accounting.ledger.answer import prepare_month
from apps.accounting.calendar.zone import billing_zone
from apps.teams.models import UNASSIGNED, NamespaceAssignment

from tests.support.factories import (label_namespace, make_cluster, make_device, make_namespace, make_rate, make_team,
                                     make_usage, make_user, utc)

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

LINE = ("kind", "adjusts_period", "team", "cluster", "namespace", "gpu_model", "mig_profile", "price_class",
        "rate_basis", "hourly_rate", "currency", "allocated_gpu_seconds", "used_gpu_seconds", "billed_seconds", "cost")


@pytest.fixture
def october():
    """A month with every case the database path must tell apart: namespaces mapped all month
    (fixed), one moved to another team on the 10th (moving), one relabelled mid-day on the 20th
    (moving, its cluster's day read from hours), one nobody mapped or labelled (unassigned),
    unallocated capacity, days rolled up and days only in hours, a MIG slice, and a rate that
    changes on the 15th; used ratios that are not whole seconds."""
    make_rate(hourly_rate="2.00")
    make_rate(hourly_rate="3.10", effective_from=date(2026, 10, 15))
    make_rate(hourly_rate="0.70", mig_profile="1g.10gb")
    prod, lab = make_cluster("prod"), make_cluster("lab")
    make_namespace(prod, "ml", "A")
    mover = make_namespace(prod, "cv", "A")
    NamespaceAssignment.objects.create(namespace=mover, team=make_team("B"), effective_from=date(2026, 10, 10))
    relabelled = make_namespace(lab, "nlp", label_team="C")
    label_namespace(relabelled, "D", since=utc(2026, 10, 20, 13))
    make_namespace(lab, "stray")
    gpu, other = make_device(prod, host="node-1"), make_device(prod, host="node-2")
    mig = make_device(lab, host="node-9", mig_profile="1g.10gb", fraction=1 / 7)
    big = make_device(lab, host="node-8")
    for day in range(1, 32):
        start = utc(2026, 10, day)
        make_usage(gpu, "ml", start, hours=5, used_ratio=0.37)
        make_usage(other, "cv", start + timedelta(hours=6), hours=3, used_ratio=0.123456789)
        make_usage(mig, "nlp", start, hours=4, used_ratio=0.5)
        make_usage(big, "stray" if day % 3 else "", start + timedelta(hours=8), hours=2, used_ratio=0.1)
        make_usage(big, "nlp", start + timedelta(hours=12), hours=2, used_ratio=0.3)
    # Days 1–25 rolled up; the rest only in hours (as before the daily roll-up runs).
    for cluster in (prod, lab):
        rebuild_days(cluster.pk, [date(2026, 10, d) for d in range(1, 26)])
    return {"prod": prod, "lab": lab}


def frozen():
    return sorted((c.cluster_id, c.cluster, c.namespace, c.team, c.gpu_model, c.mig_profile, c.price_class, c.day,
                   c.gpu_seconds, c.used_gpu_seconds, c.mig_seconds) for _, _, c in frozen_cells(Q()))


def lines():
    return sorted(StatementLine.objects.values_list(*LINE))


def test_nothing_stored_freezes_the_months_cells_exactly_and_the_stored_close_agrees(october):
    finance, admin = make_user("fin", "finance"), make_user("root", superuser=True)
    start, end = period_bounds("2026-10", billing_zone())
    live = sorted((c.cluster_id, c.cluster, c.namespace, c.team, c.gpu_model, c.mig_profile, c.price_class, c.day,
                   c.gpu_seconds, c.used_gpu_seconds, c.mig_seconds)
                  for c in usage.usage_cells(usage.UsageFilter(start=start, end=end)))
    _select, rest, _starts = usage.fixed_day_cells(usage.UsageFilter(start=start, end=end))
    # Python computed only what the database cannot: the namespaces that change team (cv moves,
    # nlp is relabelled) and the days read from hours (the 20th in lab, the relabel's day; 26th on).
    assert {c.namespace for c in rest if c.day < date(2026, 10, 26) and c.day.day != 20} == {"cv", "nlp"}
    assert {c.day.day for c in rest if c.namespace in ("ml", "stray", "")} == {20, *range(26, 32)}

    MonthAnswer.objects.all().delete()
    do_close_period("2026-10", actor=finance)
    cold_cells, cold_lines = frozen(), lines()
    assert cold_cells == live
    teams = {(ns, day.day): team for _c, _cl, ns, team, _m, _p, _pc, day, *_ in cold_cells}
    assert teams[("cv", 9)] == "A" and teams[("cv", 10)] == "B"
    assert teams[("stray", 1)] == UNASSIGNED and teams[("", 3)] == ""
    assert {teams[("nlp", 19)], teams[("nlp", 21)]} == {"C", "D"}

    do_reopen_period("2026-10", admin)
    prepare_month("2026-10")
    assert MonthAnswer.objects.filter(period="2026-10", part__startswith="day").exists()
    do_close_period("2026-10", actor=finance)
    assert frozen() == cold_cells
    assert lines() == cold_lines
    # Hand-checked: ml's 5 H100-hours a day, 14 days at 2.00 before the 15th and 17 at 3.10 after.
    ml = [line for line in cold_lines if line[4] == "ml"]
    assert [(line[9], line[11], line[14]) for line in ml] == [
        (Decimal("2.00"), 14 * 5 * 3600.0, Decimal("140.00")), (Decimal("3.10"), 17 * 5 * 3600.0, Decimal("263.50"))]


def _stale_days() -> list[date]:
    from apps.accounting.stored.answers import stale_days
    from apps.accounting.stored.versions import read_inputs
    from apps.accounting.ledger.answer import billing_days

    return stale_days("2026-10", billing_days("2026-10"), read_inputs(["2026-10"], days=True))


@pytest.mark.parametrize("stale", [6, 7])
def test_a_close_recomputes_a_few_stale_days_and_has_the_database_freeze_a_month_of_them(october, stale):
    """A deploy (a new code version) or a worker that has not caught up leaves a month's day parts
    stale. The close recomputes up to CLOSE_RECOMPUTES_AT_MOST of them in its snapshot; with more,
    the database freezes the month (as with nothing stored) and the stale parts are left to the
    worker. Either way the frozen cells are the month's live cells and the lines the same."""
    from apps.accounting.ledger.statements import CLOSE_RECOMPUTES_AT_MOST

    assert CLOSE_RECOMPUTES_AT_MOST == 6
    finance = make_user("fin", "finance")
    prepare_month("2026-10")
    assert _stale_days() == []
    # One more H100-hour of ml on each of the first `stale` days, rolled up: those days go stale.
    extra = make_device(october["prod"], host="node-3")
    for day in range(1, stale + 1):
        make_usage(extra, "ml", utc(2026, 10, day, 20), hours=1, used_ratio=0.5)
    rebuild_days(october["prod"].pk, [date(2026, 10, d) for d in range(1, stale + 1)])
    assert _stale_days() == [date(2026, 10, d) for d in range(1, stale + 1)]
    start, end = period_bounds("2026-10", billing_zone())
    live = sorted((c.cluster_id, c.cluster, c.namespace, c.team, c.gpu_model, c.mig_profile, c.price_class, c.day,
                   c.gpu_seconds, c.used_gpu_seconds, c.mig_seconds)
                  for c in usage.usage_cells(usage.UsageFilter(start=start, end=end)))

    do_close_period("2026-10", actor=finance)
    assert frozen() == live
    # Recomputed in the close when few; left stale (for the worker) when the database froze them.
    assert _stale_days() == ([] if stale <= 6 else [date(2026, 10, d) for d in range(1, stale + 1)])
    # Hand-checked: ml's 5 H100-hours a day plus the extra hour on each stale day, all before the
    # 15th's rate change: (14 × 5 + stale) hours at 2.00, then 17 × 5 at 3.10.
    ml = [line for line in lines() if line[4] == "ml"]
    assert [(line[9], line[11], line[14]) for line in ml] == [
        (Decimal("2.00"), (14 * 5 + stale) * 3600.0, Decimal("2.00") * (14 * 5 + stale)),
        (Decimal("3.10"), 17 * 5 * 3600.0, Decimal("263.50"))]
