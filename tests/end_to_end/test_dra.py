"""GPUs allocated through Dynamic Resource Allocation, as dcgm-exporter 4.4+ labels them with
KUBERNETES_ENABLE_DRA (one copy of each series per pod of a claim, `dra_*` labels, no pod_uid),
backfilled into a real Prometheus and ingested through it; the figures are worked out by hand
(docs/accounting.md, "DRA-allocated GPUs")."""
import pytest

from apps.accounting.models import UsageHour
from apps.clusters.models import Cluster
from apps.ingest.pipeline import ingest

from tests.end_to_end.test_real_clusters import A100, H, T0, dcgm_labels, dt, every, pod, requests, series, sums
from tests.support.prom import served_series

pytestmark = [pytest.mark.django_db, pytest.mark.prometheus]


def claim(name, namespace, device, pool="node-1", mig=None):
    labels = {"dra_claim_name": name, "dra_claim_namespace": namespace, "dra_device_name": device,
              "dra_driver_name": "gpu.nvidia.com", "dra_pool_name": pool}
    if mig:
        labels.update(dra_mig_profile=mig[0], dra_mig_device_uuid=mig[1])
    return labels


def by_pod(cluster, **filters):
    rows = {}
    for r in UsageHour.objects.filter(cluster=cluster, **filters).values("namespace", "pod", "gpu_seconds",
                                                                        "used_gpu_seconds", "mig_profile"):
        g, u = rows.get((r["namespace"], r["pod"]), (0.0, 0.0))
        rows[(r["namespace"], r["pod"])] = (g + r["gpu_seconds"], u + r["used_gpu_seconds"])
    return {k: (pytest.approx(g), pytest.approx(u)) for k, (g, u) in rows.items()}


def test_dra_claims_whole_shared_unnamed_and_mig(tmp_path):
    end = T0 + 2 * H
    times = every(T0, end, 60)
    hour0 = every(T0, T0 + H, 60)
    data = []
    # A regular GPU pod, so that kube-state-metrics' requests are checked (verify_workloads on):
    # the DRA pods below request no extended resource and must still count.
    data.append(series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-REG", "node-0", workload=pod("ml", "reg")),
                       times, 100))
    data.append(requests("ml", "reg", "nvidia_com_gpu", 1, times))
    # GPU-W: a whole H100 through claim dra-a/single-gpu, pod1, 2 h at 80 %.
    data.append(series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-W", "node-1", workload=pod("dra-a", "pod1"),
                                                           extra=claim("single-gpu", "dra-a", "gpu-0")), times, 80))
    # GPU-S: one claim shared by p1 and p2 in hour 0 (a copy each of the device's 60 %), p1 alone in hour 1.
    shared = claim("shared", "dra-b", "gpu-1")
    data.append(series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-S", "node-1", gpu="1", workload=pod("dra-b", "p1"),
                                                           extra=shared), times, 60))
    data.append(series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-S", "node-1", gpu="1", workload=pod("dra-b", "p2"),
                                                           extra=shared), hour0, 60))
    # GPU-N: a claim's series whose pod labels a relabelling dropped: the claim's namespace, 2 h at 50 %.
    data.append(series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-N", "node-1", gpu="2",
                                                           extra=claim("train-claim", "dra-c", "gpu-2")), times, 50))
    # GPU-M: an A100 in MIG mode, instances 3g.40gb (GI 1), 1g.10gb (GI 2) and 1g.10gb (GI 3);
    # m1 holds a 3g.40gb device, m2 one 1g.10gb device, through DRA. dcgm-exporter keys MIG devices
    # by their parent, so every series of the GPU (each instance's, and the board's) comes once per
    # pod, each copy naming that pod's device.
    holders = {"m1": ("big", ("3g.40gb", "MIG-aaa")), "m2": ("small", ("1g.10gb", "MIG-bbb"))}
    for name, (claim_name, mig) in holders.items():
        dra = claim(claim_name, "dra-m", f"gpu-3-mig-{mig[0]}", mig=mig)
        for profile, gid, busy in (("3g.40gb", "1", 0.5), ("1g.10gb", "2", 0.25), ("1g.10gb", "3", 0.0)):
            labels = dcgm_labels("GPU-M", "node-2", gpu="3", model=A100, workload=pod("dra-m", name),
                                 extra={**dra, "GPU_I_PROFILE": profile, "GPU_I_ID": gid})
            data.append(series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, times, busy))
        data.append(series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-M", "node-2", gpu="3", model=A100,
                                                               workload=pod("dra-m", name), extra=dra), times, 30))
    with served_series(data, tmp_path) as server:
        cluster = Cluster.objects.create(name="dra", prometheus_url=server.url)
        assert cluster.verify_workloads
        run = ingest(cluster, dt(T0), dt(end))
    assert run.status == "succeeded", run.error
    # GPU-W: 7 200 s to dra-a/pod1, 80 % used.
    assert by_pod(cluster, device__uuid="GPU-W") == {("dra-a", "pod1"): (7200.0, 5760.0)}
    # GPU-S: hour 0 split between p1 and p2 (1 800 s each, 60 % of it used), hour 1 p1's alone.
    assert by_pod(cluster, device__uuid="GPU-S") == {("dra-b", "p1"): (1800.0 + 3600.0, 1080.0 + 2160.0),
                                                     ("dra-b", "p2"): (1800.0, 1080.0)}
    # GPU-N: the claim's namespace, the claim standing for the pod.
    assert by_pod(cluster, device__uuid="GPU-N") == {("dra-c", "claim:train-claim"): (7200.0, 3600.0)}
    # GPU-M: m1 its 3g.40gb (3/7 of the A100 for 2 h, 50 % busy), m2 one 1g.10gb (1/7, the first
    # such instance, GI 2, 25 % busy); GI 3 is held by no device: unallocated, as are the 2 slices
    # no instance occupies; the board's copies count nothing in MIG mode. The GPU: 7 200 s in all.
    assert by_pod(cluster, device__uuid="GPU-M") == {
        ("dra-m", "m1"): (7200 * 3 / 7, 7200 * 3 / 7 * 0.5), ("dra-m", "m2"): (7200 / 7, 7200 / 7 * 0.25),
        ("", ""): (7200 * 3 / 7, 0.0)}
    assert set(UsageHour.objects.filter(cluster=cluster, device__uuid="GPU-M", namespace="dra-m")
               .values_list("pod", "mig_profile")) == {("m1", "3g.40gb"), ("m2", "1g.10gb")}
    assert sums(cluster, device__uuid="GPU-M")["g"] == pytest.approx(7200.0)
    # No DRA pod was distrusted for want of a kube-state-metrics request.
    assert not any("requested no GPU" in w for w in run.warnings), run.warnings
    assert by_pod(cluster, device__uuid="GPU-REG") == {("ml", "reg"): (7200.0, 7200.0)}
    # Each row a claim gave is marked so (the team page lists them); the device plugin's and the
    # unallocated capacity's are not.
    claimed = set(UsageHour.objects.filter(cluster=cluster, dra_claim=True).values_list("namespace", "pod"))
    assert claimed == {("dra-a", "pod1"), ("dra-b", "p1"), ("dra-b", "p2"), ("dra-c", "claim:train-claim"),
                       ("dra-m", "m1"), ("dra-m", "m2")}
    assert not UsageHour.objects.filter(cluster=cluster, dra_claim=True, namespace="").exists()
