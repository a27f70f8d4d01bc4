"""The tables written in bulk carry no database foreign keys (migration accounting/0014,
docs/performance.md "Bulk writes"): what removes their rows with their parent is Django's
cascade, and a stored answer's own deletes. These check that nothing is left behind."""
from datetime import date

import pytest

from apps.accounting.stored.answers import drop_parts
from apps.accounting.usage.daily import rebuild_days
from apps.accounting.models import (DeviceHealthHour, MonthAnswer, MonthCell, MonthLine, PodOwner, QueuedDemandHour,
                                    QuotaHour, UsageDay, UsageDayBuilt, UsageHour)
from apps.accounting.ledger.answer import prepare_month
from apps.clusters.models import Device

from tests.support.factories import make_cluster, make_device, make_namespace, make_quota, make_rate, make_usage, utc

pytestmark = pytest.mark.django_db

ROLLUPS = (UsageHour, UsageDay, UsageDayBuilt, DeviceHealthHour, QuotaHour, QueuedDemandHour, PodOwner)


def fill(cluster):
    """Two GPUs' hours, their days, health, quota, queued demand and a pod's owner."""
    make_namespace(cluster, "ml", "A")
    gpus = [make_device(cluster, host=f"node-{i}") for i in range(2)]
    for gpu in gpus:
        make_usage(gpu, "ml", utc(2026, 3, 10), hours=3)
        DeviceHealthHour.objects.create(cluster=cluster, device=gpu, hour_start=utc(2026, 3, 10))
    make_quota(cluster, "ml", [utc(2026, 3, 10)], hard=4.0)
    QueuedDemandHour.objects.create(cluster=cluster, namespace="ml", pod="waiting", resource="nvidia.com/gpu",
                                    hour_start=utc(2026, 3, 10), requested=1.0, pending_seconds=60.0,
                                    queued_gpu_seconds=60.0)
    PodOwner.objects.create(cluster=cluster, namespace="ml", pod="pod-0", owner_kind="ReplicaSet", owner_name="rs",
                            workload_kind="Deployment", workload_name="train", last_seen=utc(2026, 3, 10))
    rebuild_days(cluster.pk, [date(2026, 3, 10)])
    return gpus


def counts(cluster_id):
    return {m.__name__: m.objects.filter(cluster_id=cluster_id).count() for m in ROLLUPS}


def test_a_deleted_cluster_takes_all_its_rollup_rows_with_it():
    prod, other = make_cluster("prod"), make_cluster("other")
    fill(prod)
    fill(other)
    prod_id = prod.pk
    assert counts(prod_id) == {"UsageHour": 6, "UsageDay": 2, "UsageDayBuilt": 1, "DeviceHealthHour": 2,
                            "QuotaHour": 1, "QueuedDemandHour": 1, "PodOwner": 1}
    prod.delete()
    assert set(counts(prod_id).values()) == {0}
    assert counts(other.pk)["UsageHour"] == 6 and counts(other.pk)["DeviceHealthHour"] == 2


def test_a_deleted_device_takes_its_hours_with_it():
    prod = make_cluster()
    first, second = fill(prod)
    Device.objects.filter(pk=first.pk).delete()
    assert list(UsageHour.objects.values_list("device_id", flat=True).distinct()) == [second.pk]
    assert list(DeviceHealthHour.objects.values_list("device_id", flat=True)) == [second.pk]


def test_a_month_answer_leaves_no_cells_or_lines_behind():
    prod = make_cluster()
    make_rate(hourly_rate="2.00")
    fill(prod)
    prepare_month("2026-03")
    assert MonthCell.objects.exists() and MonthLine.objects.exists()
    drop_parts("2026-03", [p for p in MonthAnswer.objects.values_list("part", flat=True)])
    assert not MonthAnswer.objects.exists()
    assert not MonthCell.objects.exists() and not MonthLine.objects.exists()
    prepare_month("2026-03")
    MonthAnswer.objects.all().delete()          # Django's cascade, as the admin or a shell would
    assert not MonthCell.objects.exists() and not MonthLine.objects.exists()
