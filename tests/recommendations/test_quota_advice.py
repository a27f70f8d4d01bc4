"""Advice rows from rollups: verdicts, bounds, money, YAML to apply, ClusterQueues, snapshots."""
from datetime import timedelta
from decimal import Decimal
from types import SimpleNamespace

import pytest
import yaml

from apps.recommendations import kueue
from apps.recommendations.advice import AdviceQuery, advice_rows
from apps.recommendations.models import RecommendationSnapshot
from apps.recommendations.snapshots import do_snapshot_recommendations

from tests.support import factories as f
from .conftest import injected_rate


def rows_by_name(**kw):
    q = AdviceQuery(window_days=2, now=f.END + timedelta(minutes=30), **kw)
    return {r["name"]: r for r in advice_rows(q, rate_fn=injected_rate)}


def test_verdicts_bounds_and_money(fleet, django_assert_max_num_queries):
    # the first read computes the window's histories and models and stores them (docs/performance.md,
    # "Right-sizing and quota advice"); the next reads them back
    with django_assert_max_num_queries(27):
        rows_by_name()
    with django_assert_max_num_queries(12):
        rows = rows_by_name()
    assert list(rows) == ["infer", "mig", "empty", "ml", "scratch", "short"]  # worst first

    ml = rows["ml"]
    assert (ml["kind"], ml["team"], ml["verdict"], ml["resource"]) == ("namespace", "vision", "over_provisioned",
                                                                      "requests.nvidia.com/gpu")
    # 24 h at 2 and 24 h at 6: P50 4, P90 = P95 = 6; two days of history.
    assert (ml["p50"], ml["p90"], ml["p95"], ml["target"]) == (4.0, 6.0, 6.0, 7)
    assert ml["lower_bound"] == pytest.approx(2.3) and ml["upper_bound"] == pytest.approx(10.35)
    assert ml["hard"] == 16 and ml["efficiency"] == 0.25 and ml["history_days"] == 2.0
    assert "quota 16 is above the upper bound 10.35" in ml["reason"]
    assert (ml["monthly_money_at_stake"], ml["currency"]) == ("13140.00", "EUR")  # 9 × 730 × 2.00

    infer = rows["infer"]
    assert infer["verdict"] == "under_provisioned"
    assert "pods waited 1 GPU-hours in Pending" in infer["reason"]
    assert (infer["target"], infer["recommended"], infer["monthly_money_at_stake"]) == (3, 3, "1460.00")

    mig = rows["mig"]
    assert mig["resource"] == "requests.nvidia.com/mig-1g.10gb"
    assert (mig["p90"], mig["target"], mig["recommended"]) == (3.0, 4, 4)
    assert "at the quota of 3 or above it during 100% of the time" in mig["reason"]
    assert mig["monthly_money_at_stake"] == "365.00"  # 1 instance × 730 × 0.50

    empty = rows["empty"]
    assert (empty["verdict"], empty["target"], empty["efficiency"]) == ("over_provisioned", 0, None)
    assert empty["monthly_money_at_stake"] == "11680.00"  # priced at the cluster's H100 rate: 8 × 730 × 2.00


def test_a_namespace_without_quota(fleet):
    scratch = rows_by_name()["scratch"]
    assert scratch["verdict"] == "no_quota"
    assert scratch["hard"] is None and scratch["target"] == 2   # ceil(1 × 1.15)
    assert scratch["monthly_money_at_stake"] is None
    assert yaml.safe_load(scratch["yaml"])["spec"]["hard"] == {"requests.nvidia.com/gpu": "2"}


def test_short_history_widens_the_bounds(fleet):
    short = rows_by_name()["short"]
    assert short["history_days"] == 0.5
    assert short["target"] == 4
    assert short["lower_bound"] == 0.0
    assert short["upper_bound"] == pytest.approx(10.35)  # 3 × 1.15 × (1 + 1/0.5)


def test_queued_demand_turns_ok_into_under_provisioned(fleet):
    from apps.accounting.models import QueuedDemandHour

    QueuedDemandHour.objects.all().delete()
    assert rows_by_name()["infer"]["verdict"] == "ok"
    f.make_queued(fleet["cluster"], "infer", f.END - timedelta(hours=5), 0.5)
    assert rows_by_name()["infer"]["verdict"] == "under_provisioned"


def test_resourcequota_yaml_round_trip(fleet):
    rows = rows_by_name()
    assert yaml.safe_load(rows["ml"]["yaml"]) == {
        "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "gpu-quota", "namespace": "ml"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "7"}},
    }
    assert yaml.safe_load(rows["mig"]["yaml"])["spec"]["hard"] == {"requests.nvidia.com/mig-1g.10gb": "4"}
    assert yaml.safe_load(rows["infer"]["yaml"])["metadata"] == {"name": "gpu-quota", "namespace": "infer"}


def test_team_scope_and_money_visibility(fleet):
    rows = rows_by_name(teams=frozenset({"vision"}), money=False)
    assert list(rows) == ["ml"]
    assert rows["ml"]["monthly_money_at_stake"] is None
    assert rows["ml"]["resources"][0]["monthly_money_at_stake"] is None


def _cq_row(flavor, resource, nominal, **kw):
    base = dict(cluster_queue="team-cq", cohort="research", flavor=flavor, resource=resource,
                nominal_quota=nominal, borrowing_limit=None, lending_limit=None, pending_workloads=0,
                namespaces=["ml", "scratch"])
    base.update(kw)
    return SimpleNamespace(**base)


def test_cluster_queue_from_member_namespaces(fleet, monkeypatch):
    monkeypatch.setattr(kueue, "latest_quotas", lambda cluster: {"team-cq": [
        _cq_row("h100", "cpu", 64),
        _cq_row("h100", "nvidia.com/gpu", 20, borrowing_limit=4),
    ]})
    rows = rows_by_name()
    cq = rows["team-cq"]
    assert (cq["kind"], cq["cluster_queue"], cq["namespaces"], cq["cohort"]) == (
        "cluster_queue", "team-cq", ["ml", "scratch"], "research")
    # ml + scratch: 24 h × 3 then 24 h × 7 -> P50 5, P90 7; target ceil(8.05) = 9
    assert (cq["p50"], cq["p90"], cq["target"], cq["hard"]) == (5.0, 7.0, 9, 20)
    assert cq["upper_bound"] == pytest.approx(12.075)
    # used: ml 192 × 0.25 = 48, scratch 48 × 0.5 = 24 GPU-hours of 240 allocated -> 30 %
    assert cq["efficiency"] == 0.3 and cq["verdict"] == "over_provisioned"
    assert cq["monthly_money_at_stake"] == "16060.00"  # 11 × 730 × 2.00
    assert yaml.safe_load(cq["yaml"]) == {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "team-cq"},
        "spec": {"cohort": "research", "resourceGroups": [{
            "coveredResources": ["cpu", "nvidia.com/gpu"],
            "flavors": [{"name": "h100", "resources": [
                {"name": "cpu", "nominalQuota": 64},
                {"name": "nvidia.com/gpu", "nominalQuota": 9, "borrowingLimit": 4},
            ]}],
        }]},
    }
    # a team lead of vision owns ml but not scratch: the shared queue stays hidden
    assert "team-cq" not in rows_by_name(teams=frozenset({"vision"}))


def test_cluster_queue_pending_workloads_and_flavor_split(fleet, monkeypatch):
    monkeypatch.setattr(kueue, "latest_quotas", lambda cluster: {"team-cq": [
        _cq_row("a", "nvidia.com/gpu", 2, pending_workloads=3, namespaces=["ml"]),
        _cq_row("b", "nvidia.com/gpu", 2, pending_workloads=3, namespaces=["ml"]),
    ]})
    cq = rows_by_name()["team-cq"]
    assert cq["verdict"] == "under_provisioned" and "3 workloads pending in Kueue" in cq["reason"]
    # recommended max(7, ceil(4 × 1.15)) = 7, shared 4 + 3 over the two flavors
    doc = yaml.safe_load(cq["yaml"])
    quotas = [(fl["name"], fl["resources"][0]["nominalQuota"]) for fl in doc["spec"]["resourceGroups"][0]["flavors"]]
    assert quotas == [("a", 4), ("b", 3)]


def test_daily_snapshot_upserts_and_feeds_previous_target(fleet, settings):
    settings.ADVICE_WINDOW_DAYS = 2
    day1 = f.END + timedelta(minutes=30)
    written = do_snapshot_recommendations(now=day1, rate_fn=injected_rate)
    assert written == 6 == RecommendationSnapshot.objects.count()
    assert do_snapshot_recommendations(now=day1, rate_fn=injected_rate) == 6
    assert RecommendationSnapshot.objects.count() == 6
    snap = RecommendationSnapshot.objects.get(name="ml")
    assert (snap.target, snap.verdict, snap.monthly_money_at_stake) == (7, "over_provisioned", Decimal("13140.00"))
    # the next day the page shows yesterday's target beside today's advice
    RecommendationSnapshot.objects.filter(name="ml").update(target=9)
    q = AdviceQuery(window_days=2, now=day1 + timedelta(days=1))
    ml = {r["name"]: r for r in advice_rows(q, rate_fn=injected_rate)}["ml"]
    assert ml["previous_target"] == 9


def test_a_quota_deleted_during_the_window_no_longer_counts(fleet):
    from apps.accounting.models import QuotaHour

    # ml's quota last seen 25 hours before the end: gone
    QuotaHour.objects.filter(namespace="ml", hour_start__gte=f.END - timedelta(hours=25)).delete()
    ml = rows_by_name()["ml"]
    assert (ml["verdict"], ml["hard"]) == ("no_quota", None)


def test_cluster_queue_from_ingested_kueue_rows(fleet):
    from apps.clusters.models import ClusterQueueQuota

    c = fleet["cluster"]
    seen = f.END - timedelta(hours=1)
    common = dict(cluster=c, cluster_queue="research", cohort="", namespaces=["ml", "infer"])
    ClusterQueueQuota.objects.create(**common, flavor="h100", resource="nvidia.com/gpu", nominal_quota=12,
                                     lending_limit=2, pending_workloads=0, observed_at=seen)
    ClusterQueueQuota.objects.create(**common, flavor="h100", resource="memory", nominal_quota=2**40,
                                     observed_at=seen)
    cq = rows_by_name()["research"]
    # ml + infer: 24 h × 4 then 24 h × 8 -> P90 8, target ceil(9.2) = 10; infer's queued hour -> under
    assert (cq["kind"], cq["p90"], cq["target"], cq["hard"]) == ("cluster_queue", 8.0, 10, 12)
    assert cq["verdict"] == "under_provisioned" and "pods waited 1 GPU-hours" in cq["reason"]
    # apply max(10, ceil(12 × 1.15) = 14) = 14; |12 - 14| × 730 × 2.00 = 2920.00
    assert (cq["recommended"], cq["monthly_money_at_stake"]) == (14, "2920.00")
    doc = yaml.safe_load(cq["yaml"])
    assert "cohort" not in doc["spec"]
    assert doc["spec"]["resourceGroups"] == [{
        "coveredResources": ["memory", "nvidia.com/gpu"],
        "flavors": [{"name": "h100", "resources": [
            {"name": "memory", "nominalQuota": 2**40},
            {"name": "nvidia.com/gpu", "nominalQuota": 14, "lendingLimit": 2},
        ]}],
    }]


def test_cluster_queue_without_namespaces_gets_no_advice(fleet):
    from apps.clusters.models import ClusterQueueQuota

    ClusterQueueQuota.objects.create(cluster=fleet["cluster"], cluster_queue="unmapped", flavor="h100",
                                     resource="nvidia.com/gpu", nominal_quota=8, observed_at=f.END)
    assert "unmapped" not in rows_by_name()


def test_mig_quota_priced_from_the_parent_model_rate(fleet):
    """No profile rate on the card: 2.00 per A100 GPU-hour × 1/7 per 1g.10gb instance-hour."""
    def rate(model, profile, price_class, day):
        return (Decimal("2.00"), "EUR")

    def basis(model, profile, price_class, day):
        return "gpu_model"

    q = AdviceQuery(window_days=2, now=f.END)
    mig = {r["name"]: r for r in advice_rows(q, rate_fn=rate, basis_fn=basis)}["mig"]
    assert mig["monthly_money_at_stake"] == "208.57"   # 1 instance × 730 × 2/7


def test_queued_pods_with_quota_to_spare_wait_for_capacity_not_quota(fleet):
    """A pending pod whose request still fits under the hard limit is not a quota problem."""
    from apps.accounting.models import QueuedDemandHour, QuotaHour

    QueuedDemandHour.objects.all().delete()
    hour = f.END - timedelta(hours=5)
    hard = QuotaHour.objects.filter(namespace="infer", hour_start=hour).values_list("hard", flat=True).first()
    assert hard is not None
    QuotaHour.objects.filter(namespace="infer", hour_start=hour).update(used_max=hard - 2)  # room for 2
    f.make_queued(fleet["cluster"], "infer", hour, 0.5)                                          # asks for 1
    row = rows_by_name()["infer"]
    assert row["verdict"] == "ok"
    assert "0.50 GPU-hours queued with quota to spare: pending pods wait for capacity, not quota" in row["reason"]
    QuotaHour.objects.filter(namespace="infer", hour_start=hour).update(used_max=hard)       # now full
    assert rows_by_name()["infer"]["verdict"] == "under_provisioned"
