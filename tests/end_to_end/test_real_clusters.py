"""Histories the way production clusters produce them, in the label sets real exporters emit,
backfilled into a real Prometheus and ingested through it; every expected figure is worked
out by hand in the test (docs/accounting.md holds the rules)."""
import time
from datetime import datetime, timezone

import pytest
from django.db.models import Sum

from apps.accounting.models import DeviceHealthHour, QueuedDemandHour, UsageHour
from apps.ingest.pipeline import ingest
from apps.simulator.emit import SimSeries

from tests.support.prom import served_series
from tests.support.factories import make_cluster

pytestmark = [pytest.mark.django_db, pytest.mark.prometheus]

H = 3600
T0 = (int(time.time()) // H) * H - 3 * 24 * H   # a whole hour, three days back
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
KSM = {"instance": "10.0.0.2:8080", "job": "kube-state-metrics"}


def dt(ts):
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def dcgm_labels(uuid, host, gpu="0", model=H100, workload=None, extra=None, job="nvidia-dcgm-exporter",
                instance="10.0.1.1:9400"):
    """dcgm-exporter's device labels in its own order, the workload labels, then Prometheus'."""
    labels = {"gpu": gpu, "UUID": uuid, "pci_bus_id": f"00000000:{int(gpu) + 7:02X}:00.0", "device": f"nvidia{gpu}",
              "modelName": model, "Hostname": host, "DCGM_FI_DRIVER_VERSION": "570.86.15"}
    labels.update(extra or {})
    labels.update(workload or {})
    labels.update(instance=instance, job=job)
    return labels


def pod(namespace, name, container="main"):
    return {"container": container, "namespace": namespace, "pod": name}


def every(start, end, step, offset=0, skip=()):
    """Timestamps start+offset, +step, … before end, leaving out those inside any (a, b) of `skip`."""
    out = []
    t = start + offset
    while t < end:
        if not any(a <= t < b for a, b in skip):
            out.append(t)
        t += step
    return out


def series(metric, labels, times, value):
    return SimSeries(metric, labels, [(t, float(value)) for t in times])


def requests(namespace, name, resource, count, times, extra=None):
    labels = {"namespace": namespace, "pod": name, "uid": f"uid-{name}", "container": "main", "node": "node-1",
              "resource": resource, "unit": "integer", **KSM, **(extra or {})}
    return SimSeries("kube_pod_container_resource_requests", labels, [(t, float(count)) for t in times])


def phase(namespace, name, value_phase, times, extra=None):
    labels = {"namespace": namespace, "pod": name, "uid": f"uid-{name}", "phase": value_phase, **KSM, **(extra or {})}
    return SimSeries("kube_pod_status_phase", labels, [(t, 1.0) for t in times])


def gpu_seconds_by(field, cluster, **filters):
    rows = UsageHour.objects.filter(cluster=cluster, **filters).values(field).annotate(s=Sum("gpu_seconds"))
    return {r[field]: r["s"] for r in rows}


def sums(cluster, **filters):
    return UsageHour.objects.filter(cluster=cluster, **filters).aggregate(
        g=Sum("gpu_seconds"), u=Sum("used_gpu_seconds"), m=Sum("mig_seconds"), e=Sum("energy_joules"))


# ---------------------------------------------------------------- 1. an HA Prometheus pair

def test_ha_pair_counts_each_device_once_and_fills_one_replicas_gap_from_the_other(tmp_path, settings):
    settings.INGEST_CHUNK_HOURS = 2   # a chunk boundary inside the history, too
    end = T0 + 3 * H
    gap_a = [(T0 + 2 * H + 600, T0 + 2 * H + 1200)]    # replica a misses 10 minutes in hour 2
    gap_b = [(T0 + H + 1200, T0 + H + 2400)]           # replica b misses 20 minutes in hour 1
    data = []
    for replica, offset, gaps in (("prom-0", 0, gap_a), ("prom-1", 7, gap_b)):
        rep = {"prometheus_replica": replica}
        times = every(T0, end, 30, offset, gaps)
        data.append(series("DCGM_FI_DEV_GPU_UTIL",
                           dcgm_labels("GPU-HA", "node-1", workload=pod("ml", "train-0"), extra=rep), times, 50))
        data.append(requests("ml", "train-0", "nvidia_com_gpu", 1, every(T0, end, 30, offset), rep))
        data.append(phase("ml", "train-0", "Running", every(T0, end, 30, offset), rep))
        pending = every(T0, T0 + H, 30, offset)
        data.append(requests("ml", "queued-0", "nvidia_com_gpu", 2, pending, rep))
        data.append(phase("ml", "queued-0", "Pending", pending, rep))
    with served_series(data, tmp_path) as server:
        cluster = make_cluster("ha", prometheus_url=server.url)
        run = ingest(cluster, dt(T0), dt(end))
    assert run.status == "succeeded", run.error
    # The pod held the GPU for 3 h of wall clock: 10 800 s, 3 600 s in each hour, whatever the copies.
    assert sums(cluster)["g"] == pytest.approx(10800.0)
    assert gpu_seconds_by("hour_start", cluster) == {dt(T0 + k * H): pytest.approx(3600.0) for k in range(3)}
    assert sums(cluster)["u"] == pytest.approx(5400.0)              # 50 % of it
    # a: 360 - 20 samples, b: 360 - 40; counted: a's 340 + the 19 of b's inside a's gap that no
    # sample of a is within 30 s of (b's at +607 … +1147 s into hour 2): 660 - 359 = 301 copies.
    assert any(w.startswith("301 duplicate") for w in run.warnings), run.warnings
    # The pending pod asked for 2 GPUs during hour 0, seen by both replicas: 2 × 3 600 s once.
    queued = QueuedDemandHour.objects.filter(cluster=cluster).aggregate(q=Sum("queued_gpu_seconds"),
                                                                         p=Sum("pending_seconds"))
    assert queued == {"q": pytest.approx(7200.0), "p": pytest.approx(3600.0)}


# ---------------------------------------------------------------- 3. scrape intervals that change

def test_interval_change_and_two_intervals_at_once(tmp_path):
    end = T0 + 3 * H
    # GPU-IV: 60 s in hour 0, 15 s in hour 1, 30 s in hour 2. GPU-FAST: another job at 10 s throughout.
    iv_times = every(T0, T0 + H, 60) + every(T0 + H, T0 + 2 * H, 15) + every(T0 + 2 * H, end, 30)
    data = [
        series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-IV", "node-1", workload=pod("ml", "train-0")), iv_times, 80),
        series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-FAST", "node-2", workload=pod("ml", "serve-0"),
                                                   job="dcgm-fast", instance="10.0.1.2:9400"),
               every(T0, end, 10), 40),
        requests("ml", "train-0", "nvidia_com_gpu", 1, every(T0, end, 30)),
        requests("ml", "serve-0", "nvidia_com_gpu", 1, every(T0, end, 30)),
    ]
    with served_series(data, tmp_path) as server:
        cluster = make_cluster("iv", prometheus_url=server.url)
        run = ingest(cluster, dt(T0), dt(end))
        assert run.status == "succeeded", run.error
        # each GPU held for every second of every hour: 3 600 s per hour, 80 % and 40 % used
        for uuid, util in (("GPU-IV", 0.8), ("GPU-FAST", 0.4)):
            per_hour = gpu_seconds_by("hour_start", cluster, device__uuid=uuid)
            assert per_hour == {dt(T0 + k * H): pytest.approx(3600.0) for k in range(3)}, uuid
            assert sums(cluster, device__uuid=uuid)["u"] == pytest.approx(10800.0 * util)

        # An admin who pins the interval gets exactly that: each sample 60 s, so hour 1 (240
        # samples at 15 s) reads 14 400 s — the override is theirs to set, never a guess.
        pinned = make_cluster("iv-pinned", prometheus_url=server.url, pinned_interval_seconds=60)
        ingest(pinned, dt(T0), dt(end))
    assert gpu_seconds_by("hour_start", pinned, device__uuid="GPU-IV")[dt(T0 + H)] == pytest.approx(14400.0)


# ---------------------------------------------------------------- 4. per-pod exporters, time-slicing

def test_per_pod_exporter_formats_and_shared_requests(tmp_path):
    end = T0 + H
    times = every(T0, end, 30)
    data = []
    # dcgm-exporter 4.5.3+ with --kubernetes-virtual-gpus: the device-level GPU_UTIL stays (60 %),
    # each pod gets its own series with its own utilization (40 % and 20 %); power and
    # temperature only as per-pod copies while pods are present.
    own = {"team-a": ("nb-a", "0", 40), "team-b": ("nb-b", "1", 20)}
    data.append(series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-OWN", "node-1"), times, 60))
    for ns, (name, vgpu, util) in own.items():
        extra = {"pod_uid": f"uid-{name}", "vgpu": vgpu}
        data.append(series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-OWN", "node-1", workload=pod(ns, name),
                                                               extra=extra), times, util))
        data.append(series("DCGM_FI_DEV_POWER_USAGE", dcgm_labels("GPU-OWN", "node-1", workload=pod(ns, name),
                                                                  extra=extra), times, 300))
        data.append(series("DCGM_FI_DEV_GPU_TEMP", dcgm_labels("GPU-OWN", "node-1", workload=pod(ns, name),
                                                               extra=extra), times, 55))
        data.append(requests(ns, name, "nvidia_com_gpu_shared", 1, times))
    # 4.4-4.5.2: per-pod copies of the device's value (60 %) for both pods.
    for ns, name, vgpu in (("team-c", "nb-c", "0"), ("team-d", "nb-d", "1")):
        data.append(series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-COPY", "node-2", workload=pod(ns, name),
                                                               extra={"pod_uid": f"uid-{name}", "vgpu": vgpu}),
                           times, 60))
        data.append(requests(ns, name, "nvidia_com_gpu", 1, times))
    # --kubernetes-enable-pod-uid alone: an ordinary GPU whose pod carries pod_uid.
    uid = {"pod_uid": "uid-solo"}
    for metric, value in (("DCGM_FI_DEV_GPU_UTIL", 80), ("DCGM_FI_DEV_GPU_TEMP", 50),
                          ("DCGM_FI_DEV_POWER_USAGE", 200)):
        data.append(series(metric, dcgm_labels("GPU-UID", "node-3", workload=pod("ml", "solo"), extra=uid),
                           times, value))
    data.append(requests("ml", "solo", "nvidia_com_gpu", 1, times))
    # Lower-cased labels (a managed cluster's exporter): a MIG 1g.10gb instance of an H100 at 50 %.
    lower = {"gpu": "0", "uuid": "GPU-LC", "device": "nvidia0", "modelname": H100, "hostname": "node-4",
             "gpu_i_profile": "1g.10gb", "gpu_i_id": "7", **pod("ml", "mig-pod"),
             "instance": "10.0.1.4:9400", "job": "nvidia-dcgm-exporter"}
    data.append(series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", lower, times, 0.5))
    data.append(requests("ml", "mig-pod", "nvidia_com_mig_1g_10gb", 1, times))
    # A pod waiting for a time-sliced replica all hour.
    data.append(requests("ml", "shared-wait", "nvidia_com_gpu_shared", 1, times))
    data.append(phase("ml", "shared-wait", "Pending", times))

    with served_series(data, tmp_path) as server:
        cluster = make_cluster("ts", prometheus_url=server.url)
        run = ingest(cluster, dt(T0), dt(end))
    assert run.status == "succeeded", run.error

    # GPU-OWN: two pods share 3 600 s: 1 800 s each; each used its own share of the whole GPU.
    assert sums(cluster, namespace="team-a") == {"g": pytest.approx(1800.0), "u": pytest.approx(1440.0),
                                                 "m": 0.0, "e": pytest.approx(540000.0)}
    assert sums(cluster, namespace="team-b")["u"] == pytest.approx(720.0)
    assert sums(cluster, device__uuid="GPU-OWN", namespace="")["g"] is None   # the device series adds nothing
    health = DeviceHealthHour.objects.get(cluster=cluster, device__uuid="GPU-OWN")
    assert (health.temperature_c_avg, health.energy_joules) == (pytest.approx(55.0), pytest.approx(300.0 * H))
    # GPU-COPY: copies of the device's 60 %: each pod's half of the GPU was 60 % busy.
    assert sums(cluster, namespace="team-c")["g"] == pytest.approx(1800.0)
    assert sums(cluster, namespace="team-c")["u"] == pytest.approx(1080.0)
    # GPU-UID: pod_uid alone is an ordinary pod, with health and energy.
    assert sums(cluster, device__uuid="GPU-UID")["g"] == pytest.approx(3600.0)
    assert sums(cluster, device__uuid="GPU-UID")["u"] == pytest.approx(2880.0)
    health = DeviceHealthHour.objects.get(cluster=cluster, device__uuid="GPU-UID")
    assert (health.temperature_c_avg, health.energy_joules) == (pytest.approx(50.0), pytest.approx(200.0 * H))
    # GPU-LC: 1g.10gb is 1/7 of an H100 for the hour; the six slices no instance occupies are the
    # board's unallocated capacity (docs/accounting.md, "When devices change").
    assert sums(cluster, device__uuid="GPU-LC", namespace="ml") == {
        "g": pytest.approx(H / 7), "u": pytest.approx(H / 14), "m": pytest.approx(3600.0), "e": None}
    assert sums(cluster, device__uuid="GPU-LC", namespace="")["g"] == pytest.approx(H * 6 / 7)
    assert sums(cluster, device__uuid="GPU-LC")["g"] == pytest.approx(H)
    # The shared request waiting: one GPU-equivalent for the hour.
    assert QueuedDemandHour.objects.get(cluster=cluster, pod="shared-wait").queued_gpu_seconds == pytest.approx(3600.0)


# ---------------------------------------------------------------- 5. the exporter's own namespace

def test_idle_gpus_are_not_billed_to_the_exporters_namespace_honor_labels_false(tmp_path):
    """honorLabels: false, a window in which no GPU holds a pod: no exported_* label anywhere,
    the plain labels name the exporter's own pod; no kube-state-metrics either."""
    end = T0 + H
    exporter = {"container": "nvidia-dcgm-exporter", "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-x7k2p"}
    data = [series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-IDLE", "node-1", workload=exporter), every(T0, end, 30), 0)]
    with served_series(data, tmp_path) as server:
        cluster = make_cluster("hl-false", prometheus_url=server.url)
        run = ingest(cluster, dt(T0), dt(end))
    assert run.status == "succeeded", run.error
    assert gpu_seconds_by("namespace", cluster) == {"": pytest.approx(3600.0)}
    assert any("exporter" in w for w in run.warnings), run.warnings


def test_idle_gpus_are_not_billed_to_the_exporters_namespace_honor_labels_true(tmp_path):
    """honorLabels: true with exporter 4.x omitting empty pod labels: the idle GPU's series
    inherit the scrape target's namespace/pod — here an exporter with a name of its own, which
    only kube-state-metrics (it requests no GPU) gives away."""
    end = T0 + H
    times = every(T0, end, 30)
    target = {"container": "exporter", "namespace": "monitoring", "pod": "gpu-metrics-4hx2z"}
    data = [
        series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-BUSY", "node-2", workload=pod("ml", "train-0")), times, 90),
        series("DCGM_FI_DEV_GPU_UTIL", dcgm_labels("GPU-FREE", "node-2", gpu="1", workload=target), times, 0),
        requests("ml", "train-0", "nvidia_com_gpu", 1, times),
        phase("monitoring", "gpu-metrics-4hx2z", "Running", times),
    ]
    with served_series(data, tmp_path) as server:
        cluster = make_cluster("hl-true", prometheus_url=server.url)
        run = ingest(cluster, dt(T0), dt(end))
    assert run.status == "succeeded", run.error
    assert gpu_seconds_by("namespace", cluster) == {"ml": pytest.approx(3600.0), "": pytest.approx(3600.0)}
    assert any("monitoring/gpu-metrics-4hx2z" in w for w in run.warnings), run.warnings


# ---------------------------------------------------------------- 6. MIG board power

def test_mig_board_power_counts_once_and_is_shared_by_slices(tmp_path):
    end = T0 + H
    times = every(T0, end, 30)
    instances = [("3g.40gb", "1", "team-a", "nvidia_com_mig_3g_40gb"), ("2g.20gb", "5", "team-b", "nvidia_com_mig_2g_20gb"),
                 ("1g.10gb", "13", "team-c", "nvidia_com_mig_1g_10gb"), ("1g.10gb", "14", None, None)]
    data = []
    for profile, gid, ns, resource in instances:
        extra = {"GPU_I_PROFILE": profile, "GPU_I_ID": gid}
        workload = pod(ns, f"{ns}-0") if ns else None
        data.append(series("DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                           dcgm_labels("GPU-MIG", "node-1", model=A100, workload=workload, extra=extra), times, 0.5))
        # the board's 350 W, repeated on every instance
        data.append(series("DCGM_FI_DEV_POWER_USAGE",
                           dcgm_labels("GPU-MIG", "node-1", model=A100, workload=workload, extra=extra), times, 350))
        if ns:
            data.append(requests(ns, f"{ns}-0", resource, 1, times))
    with served_series(data, tmp_path) as server:
        cluster = make_cluster("mig-power", prometheus_url=server.url)
        run = ingest(cluster, dt(T0), dt(end))
    assert run.status == "succeeded", run.error
    board = 350.0 * H   # 1.26 MJ in the hour, once
    assert DeviceHealthHour.objects.filter(cluster=cluster).aggregate(e=Sum("energy_joules"))["e"] == \
        pytest.approx(board)
    energy = {r["namespace"]: r["e"] for r in UsageHour.objects.filter(cluster=cluster).values("namespace")
              .annotate(e=Sum("energy_joules"))}
    # shared by the instances' GPU-seconds: 3/7, 2/7, 1/7, and the free instance's 1/7
    assert energy == {"team-a": pytest.approx(board * 3 / 7), "team-b": pytest.approx(board * 2 / 7),
                      "team-c": pytest.approx(board / 7), "": pytest.approx(board / 7)}
