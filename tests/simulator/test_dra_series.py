"""The simulator hands a GPU out through ResourceClaims as dcgm-exporter 4.4+ shows it with
KUBERNETES_ENABLE_DRA: its holders' series carry the claim, kube-state-metrics shows them
requesting nothing, and ingest still gives the pod its hours (docs/accounting.md, "DRA-allocated GPUs")."""
from datetime import datetime, timezone

import pytest
from django.db.models import Sum

from apps.accounting.models import UsageHour
from apps.clusters.models import Cluster
from apps.ingest.pipeline import ingest
from apps.simulator.demo import SimulatorFetcher
from apps.simulator.emit import iter_series
from apps.simulator.expected import expected_figures

from .conftest import WHOLE, tiny_scenario


def dra_scenario():
    scenario = tiny_scenario()
    scenario.dra_claims = {WHOLE.key: "gpu"}
    return scenario


def test_holders_series_carry_the_claim_and_request_nothing():
    series = list(iter_series(dra_scenario()))
    [held] = [s for s in series if s.metric == "DCGM_FI_DEV_GPU_UTIL" and s.labels.get("pod") == "trainer-0"]
    assert {k: v for k, v in held.labels.items() if k.startswith("dra_")} == {
        "dra_claim_name": "trainer-0-gpu", "dra_claim_namespace": "ml-research", "dra_device_name": "gpu-0",
        "dra_driver_name": "gpu.nvidia.com", "dra_pool_name": "node-a"}
    assert "pod_uid" not in held.labels
    [free] = [s for s in series if s.metric == "DCGM_FI_DEV_GPU_UTIL" and s.labels.get("UUID") == WHOLE.uuid
              and "pod" not in s.labels]
    assert not any(k.startswith("dra_") for k in free.labels)       # nobody's claim while nobody holds it
    requests = {s.labels["pod"] for s in series if s.metric == "kube_pod_container_resource_requests"}
    assert "trainer-0" not in requests and "jupyter-erin" in requests


@pytest.mark.django_db
def test_ingest_gives_the_claims_pod_its_hours_with_workloads_verified():
    scenario = dra_scenario()
    expected = expected_figures(scenario)
    cluster = Cluster.objects.create(name="dra-sim", prometheus_url="http://127.0.0.1:9")
    assert cluster.verify_workloads
    start, end = (datetime.fromtimestamp(t, tz=timezone.utc) for t in (scenario.start, scenario.end))
    run = ingest(cluster, start, end, fetcher=SimulatorFetcher(scenario))
    assert run.status == "succeeded", run.error
    by_ns = dict(UsageHour.objects.exclude(namespace="").values_list("namespace").annotate(s=Sum("gpu_seconds")))
    # trainer-0 held the H100 for 30 samples of 60 s: 1 800 GPU-seconds, as the oracle says.
    assert by_ns["ml-research"] == pytest.approx(1800.0)
    assert by_ns == {ns: pytest.approx(s) for ns, s in expected.allocated_gpu_seconds.items()}
