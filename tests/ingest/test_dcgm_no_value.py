"""DCGM's "no value" markers are no readings (docs/ingest.md, "What real exporters emit").

DCGM reports a field it has no value for (blank, not found, not supported, not permitted) as
a marker number: 9223372036854775792–95 for an integer field, 2147483632–35 for a 32-bit one,
140737488355328–31 for a floating-point one. dcgm-exporter wrote those out as readings until
4.5.2 (the README's sample output still shows `DCGM_FI_DEV_MEMORY_TEMP … 9223372036854775794`,
and a GPU in MIG mode showed a utilization of 9223372036854776000 %). Read as a number, one
such sample made a GPU 100 % used, its memory peak 9.2e18 MiB and its energy astronomic.
Against a real Prometheus, with the per-hour sums asked of it and without."""
from datetime import datetime, timezone

import pytest

from apps.accounting.models import UsageHour
from apps.ingest.pipeline import ingest
from apps.ingest.rollup import is_no_value
from apps.simulator.emit import SimSeries

from tests.support.prom import served_series
from tests.support.factories import make_cluster

T0 = 1_788_220_800          # 2026-09-01 00:00 UTC
H = 3600
INT64_NOT_SUPPORTED = 9223372036854775794
FP64_NOT_SUPPORTED = 140737488355330.0
# dcgm-exporter 3.3's label set on a whole GPU held by a pod (docs/ingest.md)
A100 = {"gpu": "0", "UUID": "GPU-604ac76c-0000-4000-8000-000000000001", "device": "nvidia0",
        "modelName": "NVIDIA A100-SXM4-80GB", "Hostname": "dgx-1", "container": "trainer",
        "namespace": "ml", "pod": "train-0", "instance": "10.0.0.11:9400", "job": "nvidia-dcgm-exporter"}


def _history():
    """Two hours of 60 s scrapes, 30 s into each minute. Hour 1: 40 % utilization, 1,000 MiB,
    200 W. Hour 2: every utilization, memory and power sample is DCGM's "not supported"."""
    ts = [T0 + 30 + 60 * i for i in range(120)]

    def series(metric, first, second):
        return SimSeries(metric, dict(A100), [(t, first if t < T0 + H else second) for t in ts])
    return [series("DCGM_FI_DEV_GPU_UTIL", 40.0, float(INT64_NOT_SUPPORTED)),
            series("DCGM_FI_DEV_FB_USED", 1000.0, float(INT64_NOT_SUPPORTED)),
            series("DCGM_FI_DEV_POWER_USAGE", 200.0, FP64_NOT_SUPPORTED),
            series("DCGM_FI_DEV_GPU_TEMP", 50.0, 51.0)]


def test_the_markers_are_known_as_numbers_and_real_readings_are_not():
    for marker in (2147483632, 2147483635, 9223372036854775792, 9223372036854775795,
                   140737488355328.0, 140737488355331.0):
        assert is_no_value(float(marker))
    for reading in (0.0, 40.0, 100.0, 81920.0, 700.5, 2147483631.0, 140737488355332.0, float("nan")):
        assert not is_no_value(reading)


@pytest.mark.prometheus
@pytest.mark.django_db
@pytest.mark.parametrize("aggregate", [True, False])
def test_a_marker_counts_as_allocated_and_neither_used_nor_idle(settings, tmp_path, aggregate):
    """By hand: hour 1 3,600 GPU-s held, 0.40 × 3,600 = 1,440 used, 1,000 MiB peak, 200 W ×
    3,600 s = 720,000 J. Hour 2 still 3,600 GPU-s held by ml (the pod holds the GPU), 0 used,
    0 idle, its 60 utilization samples unknown, no memory or energy reading."""
    settings.INGEST_PROMETHEUS_AGGREGATES = aggregate
    with served_series(_history(), tmp_path) as server:
        cluster = make_cluster(f"markers-{aggregate}", prometheus_url=server.url)
        run = ingest(cluster, datetime.fromtimestamp(T0, tz=timezone.utc),
                     datetime.fromtimestamp(T0 + 2 * H, tz=timezone.utc),
                     now=datetime(2026, 11, 28, tzinfo=timezone.utc))
    assert run.status == "succeeded", run.error
    first, second = UsageHour.objects.filter(cluster=cluster).order_by("hour_start")
    assert (first.namespace, first.gpu_seconds, first.used_gpu_seconds, first.idle_gpu_seconds) == \
        ("ml", pytest.approx(H), pytest.approx(1440.0), 0.0)
    assert (first.fb_used_mib_max, first.energy_joules) == (pytest.approx(1000.0), pytest.approx(720_000.0))
    assert (second.namespace, second.gpu_seconds, second.used_gpu_seconds, second.idle_gpu_seconds) == \
        ("ml", pytest.approx(H), 0.0, 0.0)
    assert second.unknown_util_samples == 60
    assert second.fb_used_mib_max is None and not second.energy_joules
    assert any("180 samples held DCGM's no-value marker" in w for w in run.warnings), run.warnings


def _lower_case_history():
    """dcgm-exporter's series as some clusters store them (dcgm-exporter#272 shows
    `dcgm_fi_prof_gr_engine_active{…,uuid=…,pod_namespace=…}`): metric names in lower case.
    Two hours of an A100 held by ml at 40 %, 60 s scrapes."""
    ts = [T0 + 30 + 60 * i for i in range(120)]
    labels = {k: v for k, v in A100.items() if k != "UUID"} | {"uuid": A100["UUID"]}
    return [SimSeries("dcgm_fi_dev_gpu_util", dict(labels), [(t, 40.0) for t in ts]),
            SimSeries("dcgm_fi_dev_fb_used", dict(labels), [(t, 1000.0) for t in ts])]


@pytest.mark.prometheus
@pytest.mark.django_db
def test_metric_names_written_in_lower_case_are_read_and_the_log_says_so(tmp_path):
    """By hand: 2 h × 3,600 GPU-s held by ml, 40 % used (2,880 GPU-s). Before: nothing was
    found under the upper-case names, so the run stored no hour at all."""
    with served_series(_lower_case_history(), tmp_path) as server:
        cluster = make_cluster("lower-case", prometheus_url=server.url)
        run = ingest(cluster, datetime.fromtimestamp(T0, tz=timezone.utc),
                     datetime.fromtimestamp(T0 + 2 * H, tz=timezone.utc),
                     now=datetime(2026, 11, 28, tzinfo=timezone.utc))
    assert run.status == "succeeded", run.error
    rows = UsageHour.objects.filter(cluster=cluster)
    assert sum(r.gpu_seconds for r in rows if r.namespace == "ml") == pytest.approx(2 * H)
    assert sum(r.used_gpu_seconds for r in rows) == pytest.approx(0.4 * 2 * H)
    assert max(r.fb_used_mib_max for r in rows) == pytest.approx(1000.0)
    assert any("dcgm_fi_dev_gpu_util" in w and "lower case" in w for w in run.warnings), run.warnings
