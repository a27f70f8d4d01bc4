"""Closed means closed (docs/chargeback.md, "3. Close the month"): no input edited after a close —
a node pool, a cluster's label trust, a label history, the billing time zone — moves a closed
month's money, and the months after it get no correction for hours that did not change."""
from datetime import date

import pytest

from apps.accounting.actions.periods import do_close_period
from apps.accounting.models import BillingPeriod
from apps.accounting.ledger.statements import statement
from apps.reports.statement_rows import statement_payload
from apps.clusters.models import Cluster

from tests.support.factories import label_namespace, make_cluster, make_device, make_namespace, make_pool, make_rate, make_team, \
    make_usage, utc

pytestmark = pytest.mark.django_db


def lines(period):
    p = statement_payload(statement(period), "team", None)
    return [(row["key"], line["kind"], line["price_class"], line["allocated_gpu_hours"], line["cost"])
            for row in p["results"] for line in row["lines"]], p["totals_by_currency"]


@pytest.fixture
def march(finance):
    """research's namespace ml held one H100 on node gpu-1 for 10 h on 10 March, 2.00/h
    on demand; spot would be 0.90/h. Closed: 20.00."""
    prod = make_cluster()
    make_namespace(prod, "ml", "research")
    make_rate(hourly_rate="2.00")
    make_rate(hourly_rate="0.90", price_class="spot")
    gpu = make_device(prod, host="gpu-1")
    make_usage(gpu, "ml", utc(2026, 3, 10), hours=10)
    make_usage(gpu, "ml", utc(2026, 4, 10), hours=1)      # April's own hour
    do_close_period("2026-03", actor=finance)
    return prod, gpu


def test_a_new_node_pool_reprices_no_closed_month(march):
    prod, gpu = march
    before = lines("2026-03")
    make_pool(prod, "gpu-*", "spot")
    assert lines("2026-03") == before == ([("research", "usage", "on_demand", 10.0, "20.00")], {"USD": "20.00"})
    # April: its own hour at today's class, and no correction for March (today: −20.00 on demand, +9.00 spot)
    assert lines("2026-04") == ([("research", "usage", "spot", 1.0, "0.90")], {"USD": "0.90"})


def test_a_pool_with_no_rate_is_no_credit(march):
    prod, gpu = march
    make_pool(prod, "gpu-*", "reserved")                  # no reserved rate: unpriced, never a credit
    assert lines("2026-04") == ([("research", "usage", "reserved", 1.0, None)], {})


def test_late_hours_after_a_pool_edit_are_billed_at_the_frozen_class(march):
    prod, gpu = march
    make_pool(prod, "gpu-*", "spot")
    make_usage(gpu, "ml", utc(2026, 3, 10, 10), hours=2, pod="late")     # 2 h more on 10 March
    assert lines("2026-04")[0] == [("research", "usage", "spot", 1.0, "0.90"),
                                   ("research", "adjustment", "on_demand", 2.0, "4.00")]


def test_a_label_trust_switch_moves_no_closed_hours(finance):
    """A namespace labelled team=vision ran 24 h on 15 March under a cluster that asked for
    approval of label teams (so: unassigned); switching the cluster to trusted after the close
    moves nothing."""
    prod = make_cluster()
    Cluster.objects.filter(pk=prod.pk).update(label_trust=Cluster.LabelTrust.APPROVE)
    make_team("vision")
    make_namespace(prod, "cv", label_team="vision")
    make_rate(hourly_rate="1.00")
    gpu = make_device(prod)
    make_usage(gpu, "cv", utc(2026, 3, 15), hours=24)
    do_close_period("2026-03", actor=finance)
    before = lines("2026-03")
    Cluster.objects.filter(pk=prod.pk).update(label_trust=Cluster.LabelTrust.TRUSTED)
    assert lines("2026-03") == before
    assert lines("2026-04") == ([], {})


def test_a_moved_split_hour_books_nothing(finance):
    """ml was labelled alpha until 10:00 on 15 March and beta after (10 h + 14 h, closed). A
    re-ingested label history puts the change at 14:00 (14 h + 10 h): nothing is late."""
    prod = make_cluster()
    make_team("alpha"), make_team("beta")
    ns = make_namespace(prod, "ml", label_team="alpha")
    label_namespace(ns, "beta", since=utc(2026, 3, 15, 10))
    make_rate(hourly_rate="1.00")
    gpu = make_device(prod)
    make_usage(gpu, "ml", utc(2026, 3, 15), hours=24)
    do_close_period("2026-03", actor=finance)
    assert lines("2026-03")[0] == [("alpha", "usage", "on_demand", 10.0, "10.00"),
                                   ("beta", "usage", "on_demand", 14.0, "14.00")]
    ns.label_history.filter(valid_from=utc(2026, 3, 15, 10)).delete()
    label_namespace(ns, "beta", since=utc(2026, 3, 15, 14))
    assert lines("2026-04") == ([], {})


def test_a_closed_month_keeps_the_zone_it_was_closed_in(finance, settings):
    """March closed in UTC: 3 h on 31 March 22:00–01:00 UTC... i.e. 2 h in March, 1 h in April.
    Switching BILLING_TIMEZONE to New York afterwards re-buckets nothing of March: no credit in
    April for hours March already billed, and March's FOCUS days still start at 00:00Z."""
    prod = make_cluster()
    make_namespace(prod, "ml", "research")
    make_rate(hourly_rate="4.00", effective_from=date(2026, 1, 1))
    gpu = make_device(prod)
    make_usage(gpu, "ml", utc(2026, 3, 31, 22), hours=3)
    do_close_period("2026-03", actor=finance)
    assert BillingPeriod.objects.get(period="2026-03").billing_timezone == "UTC"
    before = lines("2026-03")
    assert before == ([("research", "usage", "on_demand", 2.0, "8.00")], {"USD": "8.00"})

    settings.BILLING_TIMEZONE = "America/New_York"
    assert lines("2026-03") == before
    adjustments = [line for line in lines("2026-04")[0] if line[1] == "adjustment"]
    assert adjustments == []

    from apps.accounting.ledger.daily_money import focus_month
    from apps.reports.focus_csv import focus_rows
    from apps.reports.api.focus import issuer
    rows = focus_rows(focus_month("2026-03"), None, issuer())
    assert {(r["ChargePeriodStart"], r["ChargePeriodEnd"]) for r in rows} == {("2026-03-31T00:00:00Z",
                                                                                 "2026-04-01T00:00:00Z")}
    assert {(r["BillingPeriodStart"], r["BillingPeriodEnd"]) for r in rows} == {("2026-03-01T00:00:00Z",
                                                                                 "2026-04-01T00:00:00Z")}
