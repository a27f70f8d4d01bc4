"""Re-ingesting a window older than Prometheus' retention (docs/ingest.md, "Re-ingest and
Prometheus' retention"): the hours Prometheus no longer holds keep their stored rows, instead
of being deleted and booked as negative adjustments on closed months, and the run says so.

Two real Prometheus servers hold the same history, backfilled with promtool: the first all of
it, the second only its later half, as a Prometheus does once retention has expired the rest.
"""
import time
from datetime import datetime, timezone

import pytest
import requests
from django.db.models import Sum

from apps.accounting.models import DeviceHealthHour, UsageHour
from apps.clusters.models import Cluster
from apps.ingest.pipeline import ingest
from apps.ingest.prometheus import PrometheusClient
from apps.simulator.emit import SimSeries

from tests.support.fake_http import api_only_proxy
from tests.support.prom import served_series
from tests.support.factories import make_cluster

pytestmark = [pytest.mark.django_db, pytest.mark.prometheus]

H = 3600
T0 = (int(time.time()) // H) * H - 3 * 24 * H   # a whole hour, three days back
END = T0 + 4 * H
CUT = T0 + 2 * H                                 # the second Prometheus holds nothing before it


def dt(ts):
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def history(since=T0, util=50.0, offset=0):
    """One H100 held by ml/train-0 at `util` % from T0 for 4 hours, sampled every 30 s (from
    T0 + `offset`), with its power (300 W) and kube-state-metrics' request for it; only the
    samples from `since` on."""
    times = [t for t in range(T0 + offset, END, 30) if t >= since]
    gpu = {"gpu": "0", "UUID": "GPU-RET", "pci_bus_id": "00000000:07:00.0", "device": "nvidia0",
           "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "node-1", "container": "main", "namespace": "ml",
           "pod": "train-0", "instance": "10.0.1.1:9400", "job": "nvidia-dcgm-exporter"}
    request = {"namespace": "ml", "pod": "train-0", "uid": "uid-train-0", "container": "main", "node": "node-1",
               "resource": "nvidia_com_gpu", "unit": "integer", "instance": "10.0.0.2:8080",
               "job": "kube-state-metrics"}
    return [SimSeries("DCGM_FI_DEV_GPU_UTIL", gpu, [(t, util) for t in times]),
            SimSeries("DCGM_FI_DEV_POWER_USAGE", gpu, [(t, 300.0) for t in times]),
            SimSeries("kube_pod_container_resource_requests", request, [(t, 1.0) for t in times])]


def by_hour(cluster):
    rows = UsageHour.objects.filter(cluster=cluster).values("hour_start").annotate(g=Sum("gpu_seconds"))
    return {r["hour_start"]: r["g"] for r in rows}


FOUR_HOURS = {dt(T0 + k * H): pytest.approx(3600.0) for k in range(4)}


@pytest.fixture
def ingested_in_full(tmp_path):
    """The cluster ingested from the Prometheus that holds the whole history: 4 × 3 600 s."""
    with served_series(history(), tmp_path / "full") as server:
        cluster = make_cluster("ret", prometheus_url=server.url)
        run = ingest(cluster, dt(T0), dt(END))
    assert run.status == "succeeded", run.error
    assert by_hour(cluster) == FOUR_HOURS
    assert DeviceHealthHour.objects.filter(cluster=cluster).count() == 4
    return cluster


def test_prometheus_reports_the_oldest_sample_it_holds(tmp_path):
    with served_series(history(since=CUT), tmp_path) as server:
        assert PrometheusClient(server.url).lowest_timestamp() == CUT
    with served_series(history(since=CUT), tmp_path / "again") as server, api_only_proxy(server.url) as proxy:
        assert requests.get(proxy + "/metrics", timeout=10).status_code == 404
        assert PrometheusClient(proxy).lowest_timestamp() is None


def test_reingest_keeps_the_hours_prometheus_no_longer_holds(ingested_in_full, tmp_path):
    cluster = ingested_in_full
    with served_series(history(since=CUT), tmp_path / "later") as server:
        Cluster.objects.filter(pk=cluster.pk).update(prometheus_url=server.url)
        cluster.refresh_from_db()
        run = ingest(cluster, dt(T0), dt(END))
    assert run.status == "succeeded", run.error
    assert by_hour(cluster) == FOUR_HOURS                       # the first two hours were kept
    assert DeviceHealthHour.objects.filter(cluster=cluster).count() == 4
    cut = dt(CUT).strftime("%Y-%m-%d %H:%M")
    assert f"Prometheus holds nothing before {cut} UTC: kept 2 stored hours" in run.warnings, run.warnings


def test_without_its_own_metrics_the_first_sample_of_the_run_is_the_limit(ingested_in_full, tmp_path):
    """Behind a query layer Prometheus' own /metrics is out of reach: the earliest sample the run
    reads for the cluster stands in for the oldest it holds."""
    cluster = ingested_in_full
    with served_series(history(since=CUT), tmp_path / "later") as server, api_only_proxy(server.url) as proxy:
        Cluster.objects.filter(pk=cluster.pk).update(prometheus_url=proxy)
        cluster.refresh_from_db()
        run = ingest(cluster, dt(T0), dt(END))
    assert run.status == "succeeded", run.error
    assert by_hour(cluster) == FOUR_HOURS
    cut = dt(CUT).strftime("%Y-%m-%d %H:%M")
    assert f"Prometheus holds nothing before {cut} UTC: kept 2 stored hours" in run.warnings, run.warnings


def test_hours_prometheus_still_holds_are_rewritten_from_it(ingested_in_full, tmp_path):
    """Inside what Prometheus holds, a re-ingest still rewrites every hour from it: here the GPU
    is gone from the last hour, so that hour's row is deleted, and nothing is kept."""
    cluster = ingested_in_full
    # The same history, every sample ending an hour before the end: the GPU is gone for the last hour.
    trimmed = [SimSeries(s.metric, s.labels, [(t, v) for t, v in s.samples if t < END - H]) for s in history()]
    with served_series(trimmed, tmp_path / "trimmed") as server:
        Cluster.objects.filter(pk=cluster.pk).update(prometheus_url=server.url)
        cluster.refresh_from_db()
        run = ingest(cluster, dt(T0), dt(END))
    assert run.status == "succeeded", run.error
    assert by_hour(cluster) == {dt(T0 + k * H): pytest.approx(3600.0) for k in range(3)}
    assert not any("kept" in w for w in run.warnings), run.warnings


def used_by_hour(cluster):
    rows = UsageHour.objects.filter(cluster=cluster).values("hour_start").annotate(u=Sum("used_gpu_seconds"))
    return {r["hour_start"]: r["u"] for r in rows}


def test_a_window_inside_the_history_is_rewritten_from_its_first_hour(tmp_path):
    """Behind a query layer, with samples 7 s past each half minute: a re-ingest of the last
    three hours from a corrected history (80 % busy instead of 50 %) rewrites all three. The
    samples Prometheus gives from just before the window (its look-around) show it holds the
    window's first hour too, though that hour's first sample is 7 s into it."""
    with served_series(history(offset=7), tmp_path / "first") as server:
        cluster = make_cluster("ret", prometheus_url=server.url)
        assert ingest(cluster, dt(T0), dt(END)).status == "succeeded"
    assert used_by_hour(cluster) == {dt(T0 + k * H): pytest.approx(1800.0) for k in range(4)}
    with served_series(history(offset=7, util=80.0), tmp_path / "corrected") as server, \
            api_only_proxy(server.url) as proxy:
        Cluster.objects.filter(pk=cluster.pk).update(prometheus_url=proxy)
        cluster.refresh_from_db()
        run = ingest(cluster, dt(T0 + H), dt(END))
    assert run.status == "succeeded", run.error
    assert used_by_hour(cluster) == {dt(T0): pytest.approx(1800.0),
                                     **{dt(T0 + k * H): pytest.approx(2880.0) for k in range(1, 4)}}
    assert not any("kept" in w for w in run.warnings), run.warnings
