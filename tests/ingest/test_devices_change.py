"""Devices change, hours don't (docs/accounting.md, "When devices change"): a GPU switching
between MIG mode and whole, a MIG layout change, a GPU replaced under the same index and a node
renamed lose no hour and count none twice, and give the same rows for any chunking. Through a
real Prometheus, with dcgm-exporter's label sets."""
from datetime import datetime, timezone

import pytest

from apps.accounting.models import UsageHour
from apps.ingest.pipeline import ingest
from apps.simulator.emit import SimSeries

from tests.support.prom import served_series
from tests.support.factories import make_cluster

T0 = 1_788_220_800          # 2026-09-01 00:00 UTC
H = 3600
NOW = datetime(2026, 11, 28, tzinfo=timezone.utc)
UUID = "GPU-5c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f"
BOARD = {"gpu": "0", "UUID": UUID, "pci_bus_id": "00000000:07:00.0", "device": "nvidia0",
         "modelName": "NVIDIA A100-SXM4-80GB", "Hostname": "gpu-node-1", "DCGM_FI_DRIVER_VERSION": "570.124.06",
         "instance": "10.0.0.11:9400", "job": "nvidia-dcgm-exporter"}


def _ts(h0: float, h1: float) -> list[int]:
    """60 s scrapes, 30 s past each minute, from hour h0 to hour h1."""
    return [int(T0 + h0 * H) + 30 + 60 * i for i in range(int((h1 - h0) * 60))]


def _whole(h0, h1, pod=None, util=50.0, labels=BOARD):
    """A whole GPU as dcp-metrics-included exports it: GPU_UTIL and GR_ENGINE_ACTIVE, one label set."""
    workload = {"container": "main", "namespace": pod[0], "pod": pod[1]} if pod else {}
    ts = _ts(h0, h1)
    return [SimSeries("DCGM_FI_DEV_GPU_UTIL", {**labels, **workload}, [(t, util) for t in ts]),
            SimSeries("DCGM_FI_PROF_GR_ENGINE_ACTIVE", {**labels, **workload}, [(t, util / 100) for t in ts]),
            SimSeries("DCGM_FI_DEV_FB_USED", {**labels, **workload}, [(t, 1000.0) for t in ts])]


def _instance(h0, h1, gi_id, profile, pod=None, active=0.5):
    """A MIG instance: GR_ENGINE_ACTIVE and FB_USED (no GPU_UTIL: DCGM has none for instances)."""
    workload = {"container": "main", "namespace": pod[0], "pod": pod[1]} if pod else {}
    labels = {**BOARD, "GPU_I_PROFILE": profile, "GPU_I_ID": str(gi_id), **workload}
    ts = _ts(h0, h1)
    return [SimSeries("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, [(t, active) for t in ts]),
            SimSeries("DCGM_FI_DEV_FB_USED", labels, [(t, 500.0) for t in ts])]


def _ingested(series, tmp_path, chunk_hours, hours, settings, name):
    settings.INGEST_CHUNK_HOURS = chunk_hours
    with served_series(series, tmp_path / f"c{chunk_hours}") as server:
        cluster = make_cluster(f"{name}-{chunk_hours}", prometheus_url=server.url)
        run = ingest(cluster, datetime.fromtimestamp(T0, tz=timezone.utc),
                     datetime.fromtimestamp(T0 + hours * H, tz=timezone.utc), now=NOW)
        server_url = server.url
    assert run.status == "succeeded", run.error
    del server_url
    rows = sorted(UsageHour.objects.filter(cluster=cluster).values_list(
        "device__uuid", "device__mig_instance_id", "namespace", "pod", "hour_start", "mig_profile",
        "gpu_fraction", "gpu_seconds", "used_gpu_seconds", "idle_gpu_seconds", "mig_seconds"))
    return rows


def _by_namespace(rows) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in rows:
        out[r[2]] = out.get(r[2], 0.0) + r[7]
    return {ns: round(s / H, 6) for ns, s in out.items()}


@pytest.mark.prometheus
@pytest.mark.django_db
def test_a_gpu_switching_between_whole_and_mig_loses_no_hour(settings, tmp_path):
    """Hours 0-4: the A100 whole, held by train/t-0 at 50 %. Hours 4-8: MIG mode (the MIG manager
    reconfigured the node), 7 × 1g.10gb, instance 1 held by lab/nb-0, the six others free.
    Hours 8-10: whole again, no pod. Before: train got 3.0, 2.0, 3.0 and 0 GPU-h with 1, 2, 3
    and 6-hour chunks (a chunk holding the device's MIG series dropped its whole-GPU series).
    By hand: train 4 GPU-h; lab 4 × 1/7 = 0.571429; unallocated 4 × 6/7 + 2 = 5.428571."""
    series = [*_whole(0, 4, ("train", "t-0")), *_whole(8, 10)]
    for gi in range(1, 8):
        series += _instance(4, 8, gi, "1g.10gb", ("lab", "nb-0") if gi == 1 else None)
    results = {h: _ingested(series, tmp_path, h, 10, settings, "switch") for h in (1, 2, 3, 6, 0)}
    assert _by_namespace(results[1]) == {"train": 4.0, "lab": 0.571429, "": 5.428571}
    for h, rows in results.items():
        assert rows == results[1], f"{h}-hour chunks"
