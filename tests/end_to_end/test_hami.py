"""GPUs shared by HAMi: each pod's share is the larger of its core share and its memory share,
a GPU's shares never add up to more than one GPU (overcommitment scaled down, and said), the rest
is unallocated; read under HAMi's current metric names and its legacy ones, backfilled into a
real Prometheus and ingested through it, figures worked out by hand (docs/accounting.md, "HAMi
fractional GPUs")."""
import pytest

from apps.accounting.models import UsageHour
from apps.clusters.models import Cluster
from apps.ingest.pipeline import ingest
from apps.simulator.emit import SimSeries

from tests.end_to_end.test_real_clusters import A100, H100, H, T0, dcgm_labels, dt, every, requests, series
from tests.support.prom import served_series

pytestmark = [pytest.mark.django_db, pytest.mark.prometheus]

MIB = 1024 * 1024
GPU_MEMORY = 81920 * MIB          # an 80 GB GPU as HAMi counts it
SCHEDULER = {"instance": "10.0.2.5:31993", "job": "hami-scheduler", "zone": "vGPU"}
MONITOR = {"instance": "10.0.1.1:31992", "job": "hami-device-plugin-monitor"}


def hami(metric, labels, times, value, scraped=SCHEDULER):
    return SimSeries(metric, {**labels, **scraped}, [(t, float(value)) for t in times])


def by_pod(cluster, uuid):
    rows = {}
    for r in UsageHour.objects.filter(cluster=cluster, device__uuid=uuid).values(
            "namespace", "pod", "hour_start", "gpu_seconds", "used_gpu_seconds"):
        rows[(r["namespace"], r["pod"], int(r["hour_start"].timestamp()) - T0)] = (
            pytest.approx(r["gpu_seconds"], abs=1e-6), pytest.approx(r["used_gpu_seconds"], abs=1e-6))
    return rows


def test_hami_shares_current_and_legacy_names_with_overcommit(tmp_path, settings):
    settings.INGEST_CHUNK_HOURS = 1     # the run log below is per chunk
    end = T0 + 2 * H
    times = every(T0, end, 60)
    hour0 = every(T0, T0 + H, 60)
    data = []
    # GPU-H, an H100 HAMi shares, current names (2.9+), behind a Prometheus that renamed the
    # series' own namespace/pod (honorLabels false): exported_namespace / exported_pod.
    data.append(series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-H", "node-1"), times, 70))
    gpu = {"node": "node-1", "device_uuid": "GPU-H", "device_index": "0", "device_type": f"NVIDIA-{H100}"}
    data.append(hami("hami_gpu_memory_limit_bytes", gpu, times, GPU_MEMORY))
    data.append(hami("hami_gpu_core_limit_ratio", gpu, times, 100))
    renamed = {"namespace": "hami-system", "pod": "hami-scheduler-7d9f"}
    for ns, name, cores, mib, busy, when in (("team-a", "a-0", 30, 20000, 20, times),
                                             ("team-b", "b-0", 10, 40960, 40, hour0)):
        ctr = {**renamed, "exported_namespace": ns, "exported_pod": name, "node": "node-1", "container_index": "0",
               "device_uuid": "GPU-H"}
        data.append(hami("hami_vgpu_core_allocated_ratio", ctr, when, cores))
        data.append(hami("hami_vgpu_memory_allocated_bytes", ctr, when, mib * MIB))
        mon = {"namespace": "hami-system", "pod": "hami-device-plugin-x", "exported_namespace": ns,
               "exported_pod": name, "container": "main", "vdevice_index": "0", "device_uuid": "GPU-H"}
        data.append(hami("hami_container_device_utilization_ratio", mon, when, busy, MONITOR))
        # memory in use: 10 000 MiB, then 12 000 MiB from the half hour on (a-0 and b-0 alike)
        data.append(SimSeries("hami_vgpu_memory_used_bytes", {**mon, **MONITOR},
                              [(t, float((10000 if (t - T0) % H < H // 2 else 12000) * MIB)) for t in when]))
        data.append(requests(ns, name, "nvidia_com_gpu", 1, when))
        data.append(requests(ns, name, "nvidia_com_gpucores", cores, when))
        data.append(requests(ns, name, "nvidia_com_gpumem", mib, when))
    # GPU-L, an A100 under the legacy names (--legacy-metrics), two pods asking 0.6 each: 1.2 GPUs.
    data.append(series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-L", "node-2", model=A100), times, 60))
    old = {"nodeid": "node-2", "deviceuuid": "GPU-L", "deviceidx": "0", "devicetype": f"NVIDIA-{A100}"}
    data.append(hami("GPUDeviceMemoryLimit", old, times, GPU_MEMORY))
    data.append(hami("GPUDeviceCoreLimit", old, times, 100))
    for ns, name, cores, mib, busy in (("team-c", "c-0", 60, 8192, 50), ("team-d", "d-0", 20, 49152, 10)):
        ctr = {"podnamespace": ns, "nodename": "node-2", "podname": name, "containeridx": "0", "deviceuuid": "GPU-L"}
        data.append(hami("vGPUCoreAllocated", ctr, times, cores))
        data.append(hami("vGPUMemoryAllocated", ctr, times, mib * MIB))
        mon = {"podnamespace": ns, "podname": name, "ctrname": "main", "vdeviceid": "0", "deviceuuid": "GPU-L"}
        data.append(hami("Device_utilization_desc_of_container", mon, times, busy, MONITOR))
        data.append(requests(ns, name, "nvidia_com_gpu", 1, times))
    with served_series(data, tmp_path) as server:
        cluster = Cluster.objects.create(name="hami", prometheus_url=server.url)
        run = ingest(cluster, dt(T0), dt(end))
    assert run.status == "succeeded", run.error
    # GPU-H, hour 0: a-0 max(30 %, 20000/81920 = 24.4 %) = 0.30 → 1 080 s; b-0 max(10 %, 40960/81920)
    # = 0.50 → 1 800 s; 0.20 unallocated → 720 s. Used, as HAMi's monitor measures each pod: a-0
    # 20 % of the GPU = 720 s, b-0 40 % = 1 440 s (unallocated capacity has no used seconds, as
    # everywhere). Hour 1: a-0 alone, 0.70 of the GPU unallocated.
    assert by_pod(cluster, "GPU-H") == {
        ("team-a", "a-0", 0): (1080.0, 720.0), ("team-b", "b-0", 0): (1800.0, 1440.0), ("", "", 0): (720.0, 0.0),
        ("team-a", "a-0", H): (1080.0, 720.0), ("", "", H): (2520.0, 0.0)}
    # The pods' memory in use, per hour: 11 000 MiB on average (half an hour of each), 12 000 at peak.
    fb = list(UsageHour.objects.filter(cluster=cluster, device__uuid="GPU-H").exclude(namespace="")
              .values_list("fb_used_mib_avg", "fb_used_mib_max"))
    assert len(fb) == 3 and all(r == (pytest.approx(11000.0), pytest.approx(12000.0)) for r in fb), fb
    # GPU-L: c-0 max(60 %, 10 %) = 0.6, d-0 max(20 %, 60 %) = 0.6: 1.2 GPUs, scaled to 0.5 each:
    # 1 800 s an hour each, nothing unallocated; used c-0 50 % → 1 800 s, d-0 10 % → 360 s.
    assert by_pod(cluster, "GPU-L") == {
        ("team-c", "c-0", 0): (1800.0, 1800.0), ("team-d", "d-0", 0): (1800.0, 360.0),
        ("team-c", "c-0", H): (1800.0, 1800.0), ("team-d", "d-0", H): (1800.0, 360.0)}
    # The run log says so, chunk by chunk (the first hour is a chunk of its own): 7 200 s in all.
    said = [w for w in run.warnings if "overcommitted" in w]
    assert [w.split(" from ")[0] for w in said] == [
        "HAMi overcommitted GPU GPU-L: its pods' shares added up to 1.20 GPUs for 3600 s"] * 2, said
    assert {w.split(" from ")[1][:16] for w in said} == {f"{dt(T0):%Y-%m-%d %H:%M}", f"{dt(T0 + H):%Y-%m-%d %H:%M}"}
    # One GPU-hour per hour per GPU, whatever the shares.
    for uuid in ("GPU-H", "GPU-L"):
        for hour in (0, H):
            assert sum(r.gpu_seconds for r in UsageHour.objects.filter(
                cluster=cluster, device__uuid=uuid, hour_start=dt(T0 + hour))) == pytest.approx(3600.0)

