"""The simulator shares a GPU through HAMi as HAMi 2.9+ shows it: dcgm-exporter's device series
only, HAMi's scheduler and monitor series per pod; ingest splits the GPU by the rule of
docs/accounting.md ("HAMi fractional GPUs") and agrees with the oracle, through the in-process feed
and through a real Prometheus."""
from datetime import datetime, timezone

import pytest
from django.db.models import Sum

from apps.accounting.models import UsageHour
from apps.clusters.models import Cluster
from apps.ingest.pipeline import ingest
from apps.simulator.demo import SimulatorFetcher
from apps.simulator.emit import iter_series
from apps.simulator.expected import expected_figures
from apps.simulator.scenario import Scenario, SimPod

from .conftest import HOUR_START, INTERVAL_SECONDS, SAMPLES, WHOLE, at

BOARD_MIB = 81559        # an H100 80GB HBM3 as its driver reports it


def hami_scenario() -> Scenario:
    """One H100 HAMi shares: a (30 cores, 20 000 MiB) for samples 0-60, b (20, 40 000) 20-80,
    c (50, 10 000) 40-100."""
    pods = [SimPod("ml-research", "embed-a", "server", [WHOLE.key], at(0), at(60), "busy"),
            SimPod("notebooks", "nb-b", "notebook", [WHOLE.key], at(20), at(80), "idle"),
            SimPod("batch", "rerank-c", "worker", [WHOLE.key], at(40), at(100), "busy")]
    scenario = Scenario(name="hami", start=HOUR_START, end=at(SAMPLES), interval_seconds=INTERVAL_SECONDS,
                        devices=[WHOLE], pods=pods,
                        namespace_teams={"ml-research": "research", "notebooks": "research", "batch": "platform"},
                        hami_shares={pods[0].uid: (30, 20000), pods[1].uid: (20, 40000), pods[2].uid: (50, 10000)},
                        seed=11)
    scenario.validate()
    return scenario


def test_the_oracle_by_hand():
    # shares: a max(0.30, 20 000/81 559 = 0.2452) = 0.30; b max(0.20, 0.4904) = 0.4904; c 0.50.
    # 20 samples of 60 s per stretch; 40-60 all three (1.2904 GPUs): each scaled by 1/1.2904.
    e = expected_figures(hami_scenario())
    b, over = 40000 / BOARD_MIB, 0.3 + 40000 / BOARD_MIB + 0.5
    assert e.allocated_gpu_seconds["ml-research"] == pytest.approx(1200 * 0.3 * 2 + 1200 * 0.3 / over)
    assert e.allocated_gpu_seconds["notebooks"] == pytest.approx(1200 * b * 2 + 1200 * b / over)
    assert e.allocated_gpu_seconds["batch"] == pytest.approx(1200 * 0.5 / over + 1200 * 0.5 * 2)
    assert e.capacity_gpu_seconds == pytest.approx(7200.0)
    assert e.allocated_total_gpu_seconds + e.unallocated_gpu_seconds == pytest.approx(7200.0)


def test_series_as_hami_and_dcgm_exporter_publish_them():
    series = list(iter_series(hami_scenario()))
    util = [s for s in series if s.metric == "DCGM_FI_DEV_GPU_UTIL"]
    assert len(util) == 1 and "pod" not in util[0].labels       # dcgm-exporter does not see HAMi's vGPUs
    [core] = [s for s in series if s.metric == "hami_vgpu_core_allocated_ratio" and s.labels["pod"] == "embed-a"]
    assert core.labels == {"namespace": "ml-research", "node": "node-a", "pod": "embed-a", "container_index": "0",
                           "device_uuid": WHOLE.uuid, "instance": "10.0.0.3:31993", "job": "hami-scheduler",
                           "zone": "vGPU"}
    assert {v for _, v in core.samples} == {30.0} and len(core.samples) == 60
    [mem] = [s for s in series if s.metric == "hami_vgpu_memory_allocated_bytes" and s.labels["pod"] == "nb-b"]
    assert {v for _, v in mem.samples} == {40000.0 * 1024 * 1024}
    requests = {(s.labels["pod"], s.labels["resource"]): s.samples[0][1] for s in series
                if s.metric == "kube_pod_container_resource_requests"}
    assert requests[("rerank-c", "nvidia_com_gpu")] == 1.0 and requests[("rerank-c", "nvidia_com_gpucores")] == 50.0


def figures(cluster):
    rows = UsageHour.objects.filter(cluster=cluster)
    by_ns = dict(rows.exclude(namespace="").values_list("namespace").annotate(s=Sum("gpu_seconds")))
    used = dict(rows.exclude(namespace="").values_list("namespace").annotate(s=Sum("used_gpu_seconds")))
    return by_ns, used, rows.filter(namespace="").aggregate(s=Sum("gpu_seconds"))["s"]


def assert_matches_oracle(cluster, scenario, run):
    assert run.status == "succeeded", run.error
    e = expected_figures(scenario)
    by_ns, used, free = figures(cluster)
    assert by_ns == {ns: pytest.approx(v) for ns, v in e.allocated_gpu_seconds.items()}
    assert used == {ns: pytest.approx(v) for ns, v in e.used_gpu_seconds.items()}
    assert free == pytest.approx(e.unallocated_gpu_seconds)
    assert any("HAMi overcommitted GPU" in w for w in run.warnings), run.warnings


@pytest.mark.django_db
def test_ingest_of_the_in_process_feed_matches_the_oracle():
    scenario = hami_scenario()
    cluster = Cluster.objects.create(name="hami-sim", prometheus_url="http://127.0.0.1:9")
    start, end = (datetime.fromtimestamp(t, tz=timezone.utc) for t in (scenario.start, scenario.end))
    assert_matches_oracle(cluster, scenario, ingest(cluster, start, end, fetcher=SimulatorFetcher(scenario)))


@pytest.mark.django_db
@pytest.mark.prometheus
def test_ingest_through_a_real_prometheus_matches_the_oracle(tmp_path):
    from tests.support.prom import served_series

    scenario = hami_scenario()
    start, end = (datetime.fromtimestamp(t, tz=timezone.utc) for t in (scenario.start, scenario.end))
    with served_series(list(iter_series(scenario)), tmp_path) as server:
        cluster = Cluster.objects.create(name="hami-prom", prometheus_url=server.url)
        assert_matches_oracle(cluster, scenario, ingest(cluster, start, end))
