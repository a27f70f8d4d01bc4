"""The quota advice's histories and the right-sizing's workload usage are stored per window
(docs/performance.md, "Right-sizing and quota advice"): read from the store they are what the
rollups give, a second read aggregates no hours, and a write to anything they read (usage hours,
pod owners, quota or queued-demand hours) is seen at once — never stale."""
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounting.models import PodOwner, QuotaHour
from apps.accounting.usage.workloads import computed_workload_usage, workload_usage
from apps.recommendations.history import (_dump_histories, cluster_models, computed_cluster_models,
                                          computed_histories, namespace_histories)

from tests.support.factories import hours_before, make_cluster, make_device, make_queued, make_quota, \
    make_usage_hours, utc

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="stored answers are Postgres only")]

END = utc(2026, 11, 3)          # the window crosses a month: 2026-10-06 → 2026-11-03
START = END - timedelta(days=28)


def aggregates(work) -> list[str]:
    """The queries that summed rollup hours while `work` ran."""
    with CaptureQueriesContext(connection) as q:
        work()
    return [x["sql"] for x in q.captured_queries if "SUM(" in x["sql"] and "usagehour" in x["sql"]]


@pytest.fixture
def fleet():
    cluster = make_cluster("prod", ingested_until=END)
    gpu = make_device(cluster)
    make_usage_hours(gpu, "ml", "train-abcde", hours_before(END, 48), 1, efficiency=0.25,
                     fb_used_mib_max=8000.0)
    make_quota(cluster, "ml", hours_before(END, 48), hard=4, used=1)
    PodOwner.objects.create(cluster=cluster, namespace="ml", pod="train-abcde", owner_kind="ReplicaSet",
                            owner_name="train-7f9", workload_kind="Deployment", workload_name="train",
                            last_seen=END)
    return cluster


def histories(cluster):
    return namespace_histories([cluster.pk], START, END)


def test_stored_reads_are_the_computed_ones_and_a_second_read_sums_nothing(fleet):
    ids = [fleet.pk]
    first = histories(fleet)
    expected = computed_histories(ids, START, END)
    for key, h in expected.items():
        h.history_start = END - timedelta(hours=48)     # the first hour of ml, inside the window
    assert _dump_histories(first) == _dump_histories(expected)
    assert first[(fleet.pk, "ml")].history_start == END - timedelta(hours=48)
    assert cluster_models(ids, START, END) == computed_cluster_models(ids, START, END)
    assert workload_usage(ids, START, END) == computed_workload_usage(ids, START, END)
    [u] = workload_usage(ids, START, END)
    assert (u.workload_kind, u.workload_name, u.hours, u.fb_peak_mib) == ("Deployment", "train", 48, 8000.0)

    assert aggregates(lambda: (histories(fleet), cluster_models(ids, START, END),
                               workload_usage(ids, START, END))) == []
    # a team's namespaces are picked from the stored rows of the fleet
    assert workload_usage(ids, START, END, namespaces={"other"}) == []


def test_a_write_to_what_they_read_is_seen_at_once(fleet):
    ids = [fleet.pk]
    assert histories(fleet)[(fleet.pk, "ml")].queued_gpu_hours == {}
    make_queued(fleet, "ml", END - timedelta(hours=2), 3.0)               # queued demand
    assert dict(histories(fleet)[(fleet.pk, "ml")].queued_gpu_hours) == {"requests.nvidia.com/gpu": 3.0}
    QuotaHour.objects.filter(hour_start=END - timedelta(hours=1)).update(used_max=6)   # a quota hour
    assert histories(fleet)[(fleet.pk, "ml")].quota_peak == {"requests.nvidia.com/gpu": 6}

    assert [u.workload_name for u in workload_usage(ids, START, END)] == ["train"]
    PodOwner.objects.filter(pod="train-abcde").update(workload_name="trainer")   # pod owners
    assert [u.workload_name for u in workload_usage(ids, START, END)] == ["trainer"]
    make_usage_hours(make_device(fleet, host="node-2"), "ml", "eval-0", [END - timedelta(hours=3)], 1)  # usage
    assert sorted(u.workload_name for u in workload_usage(ids, START, END)) == ["eval-0", "trainer"]
    assert set(histories(fleet)[(fleet.pk, "ml")].hourly["requests.nvidia.com/gpu"].values()) == {1.0, 2.0}


def test_the_worker_stores_the_default_right_sizing_window(fleet, client):
    """Every ingest run queues the worker's task (`prepare_month_answers`) after its writes; once
    it has run, right-sizing's default window is read from the store: the API's first read after
    the hours changed sums no hourly rows (docs/performance.md, "The longest reads"). Without the
    worker's receiver, that read sums them."""
    from apps.accounting.signals import month_prepared
    from apps.accounting.tasks import prepare_month_answers
    from apps.recommendations.apps import _prepare_rightsizing
    from tests.support.factories import make_user

    client.force_login(make_user("finance-rs", "finance"))

    def read():
        answered = []
        summed = aggregates(lambda: answered.append(client.get("/api/v1/rightsizing/", secure=True)))
        assert answered[0].status_code == 200
        return summed, sorted(r["workload_name"] for r in answered[0].json()["results"])

    make_usage_hours(make_device(fleet, host="node-3"), "ml", "eval-1", [END - timedelta(hours=5)], 1)
    prepare_month_answers(recent=True)      # what the ingest run queues once its writes commit
    assert read() == ([], ["eval-1", "train"])
    uid = "recommendations.rightsizing_on_prepare"
    assert month_prepared.disconnect(dispatch_uid=uid)
    try:
        make_usage_hours(make_device(fleet, host="node-4"), "ml", "eval-2", [END - timedelta(hours=5)], 1)
        prepare_month_answers(recent=True)
        summed, names = read()
        assert summed and names == ["eval-1", "eval-2", "train"]
    finally:
        month_prepared.connect(_prepare_rightsizing, dispatch_uid=uid)
