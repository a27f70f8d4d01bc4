"""Prometheus 2 and 3 alike (docs/ingest.md, "Prometheus versions"): a sample exactly on a chunk's
edge is counted once, in the hour of its timestamp, whichever end of a range selector the server
includes. Scrapes on the hour, a millisecond after it and a millisecond before it give the same
rows for every whole hour, in chunks of 1, 2 and 3 hours, raw and with Prometheus' hourly sums."""
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
LABELS = {"gpu": "0", "UUID": "GPU-0e1d2c3b-4a59-4687-a6b5-c4d3e2f1a0b9", "pci_bus_id": "00000000:18:00.0",
          "device": "nvidia0", "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "gpu-node-1",
          "DCGM_FI_DRIVER_VERSION": "570.124.06", "container": "main", "namespace": "ml", "pod": "train-0",
          "instance": "10.0.0.11:9400", "job": "nvidia-dcgm-exporter"}


def _history(offset: float):
    """Six hours of 60 s scrapes at `offset` seconds from each minute (0: exactly on every hour's
    edge), 40 % busy, 20,000 MiB of memory; one hour of margin on each side."""
    ts = [T0 - H + offset + 60 * i for i in range(8 * 60)]
    return [SimSeries(m, dict(LABELS), [(round(t, 3), v) for t in ts])
            for m, v in (("DCGM_FI_DEV_GPU_UTIL", 40.0), ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.4),
                         ("DCGM_FI_DEV_FB_USED", 20000.0), ("DCGM_FI_DEV_POWER_USAGE", 300.0))]


@pytest.mark.prometheus
@pytest.mark.django_db
@pytest.mark.parametrize("offset", [0.0, 0.001, -0.001])
def test_samples_on_a_chunk_edge_count_once(settings, tmp_path, offset):
    """By hand: each of the six hours holds 60 samples of 60 s: 3,600 GPU-s, 1,440 used, memory
    20,000 MiB, whatever the chunks and whether Prometheus or the portal sums the hours."""
    rows = {}
    with served_series(_history(offset), tmp_path) as server:
        for chunk in (1, 2, 3):
            for aggregate in (True, False):
                settings.INGEST_CHUNK_HOURS = chunk
                settings.INGEST_PROMETHEUS_AGGREGATES = aggregate
                cluster = make_cluster(f"edge-{chunk}-{aggregate}", prometheus_url=server.url)
                run = ingest(cluster, datetime.fromtimestamp(T0, tz=timezone.utc),
                             datetime.fromtimestamp(T0 + 6 * H, tz=timezone.utc), now=NOW)
                assert run.status == "succeeded", run.error
                rows[(chunk, aggregate)] = sorted(UsageHour.objects.filter(cluster=cluster).values_list(
                    "hour_start", "namespace", "sample_count", "gpu_seconds", "used_gpu_seconds",
                    "fb_used_mib_avg", "fb_used_mib_max"))
    expected = [(datetime.fromtimestamp(T0 + k * H, tz=timezone.utc), "ml", 60, 3600.0, 1440.0, 20000.0, 20000.0)
                for k in range(6)]
    for how, got in rows.items():
        assert [(h, ns, n, pytest.approx(g), pytest.approx(u), fb, mx) for h, ns, n, g, u, fb, mx in got] == expected, how
