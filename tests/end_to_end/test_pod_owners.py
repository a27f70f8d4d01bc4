"""Pods' workloads from kube-state-metrics (docs/advice-and-alerts.md, "Right-sizing"): the
roll-up by hand, then a real Prometheus through ingest into `PodOwner`, then right-sizing's
per-workload usage read back."""
import pytest
from django.db.models import Sum

from apps.accounting.models import PodOwner, UsageHour
from apps.accounting.usage.workloads import workload_usage
from apps.ingest.pipeline import ingest
from apps.ingest.rollup import Series, pod_owners

from tests.support.prom import served_series
from .test_real_clusters import H, KSM, T0, dcgm_labels, dt, every, pod, requests, series
from tests.support.factories import make_cluster

NONE = "<none>"


def s(labels):
    return Series(labels, [(0.0, 1.0)])


def test_owners_followed_one_step_up_by_hand():
    owners = [
        s({"namespace": "ml", "pod": "web-5d8f-a", "owner_kind": "ReplicaSet", "owner_name": "web-5d8f",
           "owner_is_controller": "true"}),
        s({"namespace": "ml", "pod": "nightly-29-x", "owner_kind": "Job", "owner_name": "nightly-29",
           "owner_is_controller": "true"}),
        s({"namespace": "ml", "pod": "once-q", "owner_kind": "Job", "owner_name": "once", "owner_is_controller": "true"}),
        s({"namespace": "nb", "pod": "erin-0", "owner_kind": "StatefulSet", "owner_name": "erin",
           "owner_is_controller": "true"}),
        s({"namespace": "db", "pod": "pg-0", "owner_kind": "StatefulSet", "owner_name": "pg",
           "owner_is_controller": "true"}),
        s({"namespace": "ml", "pod": "bare", "owner_kind": NONE, "owner_name": NONE, "owner_is_controller": NONE}),
        s({"namespace": "ml", "pod": "adopted", "owner_kind": "ReplicaSet", "owner_name": "x",
           "owner_is_controller": "false"}),
        # kube-state-metrics scraped without honor_labels: its labels are exported_*
        s({"namespace": "monitoring", "exported_namespace": "ml", "exported_pod": "ray-w-1", "pod": "ksm-0",
           "owner_kind": "RayCluster", "owner_name": "ray", "owner_is_controller": "true"}),
    ]
    replicasets = [s({"namespace": "ml", "replicaset": "web-5d8f", "owner_kind": "Deployment", "owner_name": "web"}),
                   s({"namespace": "other", "replicaset": "web-5d8f", "owner_kind": "Deployment", "owner_name": "nope"})]
    jobs = [s({"namespace": "ml", "job_name": "nightly-29", "owner_kind": "CronJob", "owner_name": "nightly"}),
            s({"namespace": "ml", "job_name": "once", "owner_kind": NONE, "owner_name": NONE})]
    notebooks = [s({"namespace": "nb", "pod": "erin-0", "label_notebook_name": "erin"})]
    got = {k: (o.owner_kind, o.owner_name, o.workload_kind, o.workload_name)
           for k, o in pod_owners(owners, replicasets, jobs, notebooks).items()}
    assert got == {
        ("ml", "web-5d8f-a"): ("ReplicaSet", "web-5d8f", "Deployment", "web"),
        ("ml", "nightly-29-x"): ("Job", "nightly-29", "CronJob", "nightly"),
        ("ml", "once-q"): ("Job", "once", "Job", "once"),
        ("nb", "erin-0"): ("StatefulSet", "erin", "Notebook", "erin"),
        ("db", "pg-0"): ("StatefulSet", "pg", "StatefulSet", "pg"),
        ("ml", "ray-w-1"): ("RayCluster", "ray", "RayCluster", "ray"),
    }


@pytest.mark.django_db
@pytest.mark.prometheus
def test_owners_through_a_real_prometheus_into_the_rollups(tmp_path):
    end = T0 + 2 * H
    times = every(T0, end, 30)
    owner = lambda ns, name, kind, owner_name: series(  # noqa: E731
        "kube_pod_owner", {"namespace": ns, "pod": name, "uid": f"uid-{name}", "owner_kind": kind,
                           "owner_name": owner_name, "owner_is_controller": "true", **KSM}, times, 1)
    data = [
        # two pods of one Deployment on two H100s, one at 8 GiB of framebuffer; a bare pod on a third
        series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-1", "node-1", workload=pod("ml", "web-5d8f-a")), times, 10),
        series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-2", "node-1", gpu="1", workload=pod("ml", "web-5d8f-b")),
               times, 30),
        series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-3", "node-1", gpu="2", workload=pod("ml", "bare")), times, 50),
        series("DCGM_FI_DEV_FB_USED", dcgm_labels("GPU-1", "node-1", workload=pod("ml", "web-5d8f-a")), times, 8192),
        series("DCGM_FI_DEV_FB_USED", dcgm_labels("GPU-2", "node-1", gpu="1", workload=pod("ml", "web-5d8f-b")),
               times, 1000),
        *(requests("ml", name, "nvidia_com_gpu", 1, times) for name in ("web-5d8f-a", "web-5d8f-b", "bare")),
        owner("ml", "web-5d8f-a", "ReplicaSet", "web-5d8f"), owner("ml", "web-5d8f-b", "ReplicaSet", "web-5d8f"),
        owner("ml", "bare", "<none>", "<none>"),
        owner("ml", "cpu-only", "ReplicaSet", "cpu-only-1"),   # holds no GPU: not stored
        series("kube_replicaset_owner", {"namespace": "ml", "replicaset": "web-5d8f", "owner_kind": "Deployment",
                                         "owner_name": "web", "owner_is_controller": "true", **KSM}, times, 1),
    ]
    with served_series(data, tmp_path) as server:
        cluster = make_cluster("owners", prometheus_url=server.url)
        run = ingest(cluster, dt(T0), dt(end))
        assert run.status == "succeeded", run.error
        again = ingest(cluster, dt(T0), dt(end))      # idempotent: the same rows
        assert again.status == "succeeded", again.error
    assert sorted(PodOwner.objects.filter(cluster=cluster).values_list("pod", "workload_kind", "workload_name")) == [
        ("web-5d8f-a", "Deployment", "web"), ("web-5d8f-b", "Deployment", "web")]
    assert UsageHour.objects.filter(cluster=cluster).aggregate(g=Sum("gpu_seconds"))["g"] == pytest.approx(3 * 7200)
    usage = {(u.workload_kind, u.workload_name): u for u in workload_usage([cluster.pk], dt(T0), dt(end))}
    assert set(usage) == {("Deployment", "web"), ("Pod", "bare")}
    web = usage[("Deployment", "web")]
    # two pods × 2 hours; the peak is pod a's 8,192 MiB; activity 10 % and 30 %: P95 of
    # [0.1, 0.1, 0.3, 0.3] at position 2.85 = 0.3
    assert (web.pods, web.hours, web.device_hours, web.fb_peak_mib) == (2, 2, 4, 8192.0)
    assert web.activity_p95 == pytest.approx(0.3) and web.activity == pytest.approx(0.2)
    assert usage[("Pod", "bare")].fb_peak_mib is None


@pytest.mark.django_db
def test_the_simulated_cluster_names_its_workloads():
    """The demo's feed carries kube-state-metrics' owners too, so the demo's right-sizing groups pods."""
    from apps.simulator.builders import build_scenario
    from apps.simulator.demo import SimulatorFetcher

    scenario = build_scenario(name="owners", hours=3, interval_seconds=60, seed=5, time_slicing=True)
    cluster = make_cluster("owners-sim", prometheus_url="http://127.0.0.1:9")
    ingest(cluster, dt(scenario.start), dt(scenario.end), fetcher=SimulatorFetcher(scenario))
    owners = {(o.namespace, o.pod): (o.workload_kind, o.workload_name) for o in PodOwner.objects.filter(cluster=cluster)}
    assert owners[("ml-research", "llm-pretrain-worker-0")] == ("Job", "llm-pretrain")
    assert owners[("notebooks", "jupyter-alice")] == ("Notebook", "jupyter-alice")
    assert owners[("batch", "etl-nightly-7f9c2")] == ("Deployment", "etl-nightly")
    assert ("ml-research", "eval-small") not in owners          # no controller: its own workload
    held = set(UsageHour.objects.filter(cluster=cluster).exclude(namespace="").values_list("namespace", "pod"))
    assert set(owners) <= held and len(owners) >= len(held) - 2


@pytest.mark.django_db
@pytest.mark.prometheus
def test_owners_of_a_run_of_several_chunks_keep_the_last_chunk_that_saw_each_pod(tmp_path):
    """Owners are upserted once per run (docs/performance.md, "Against the single raw fetch"):
    a pod holding a GPU in both 1-hour chunks is last seen at the second chunk's end, a pod
    holding one in the first hour only at the first chunk's end, one row each."""
    end = T0 + 2 * H
    times, first_hour = every(T0, end, 30), every(T0, T0 + H, 30)
    owner = lambda name: series(  # noqa: E731
        "kube_pod_owner", {"namespace": "ml", "pod": name, "uid": f"uid-{name}", "owner_kind": "ReplicaSet",
                           "owner_name": "web-5d8f", "owner_is_controller": "true", **KSM}, times, 1)
    data = [
        series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-1", "node-1", workload=pod("ml", "web-5d8f-a")), times, 10),
        series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-2", "node-1", gpu="1", workload=pod("ml", "web-5d8f-b")),
               first_hour, 30),
        requests("ml", "web-5d8f-a", "nvidia_com_gpu", 1, times),
        requests("ml", "web-5d8f-b", "nvidia_com_gpu", 1, first_hour),
        owner("web-5d8f-a"), owner("web-5d8f-b"),
    ]
    with served_series(data, tmp_path) as server:
        cluster = make_cluster("owners-chunks", prometheus_url=server.url)
        run = ingest(cluster, dt(T0), dt(end), chunk_hours=1)
        assert run.status == "succeeded", run.error
        assert run.chunks_total == 2
    assert sorted(PodOwner.objects.filter(cluster=cluster).values_list("pod", "workload_kind", "last_seen")) == [
        ("web-5d8f-a", "ReplicaSet", dt(end)), ("web-5d8f-b", "ReplicaSet", dt(T0 + H))]
