"""Every query ingest sends is valid whatever label sets the exporters emit (docs/ingest.md,
"What real exporters emit"): dcgm-exporter as NVIDIA ships it (`dcp-metrics-included.csv`)
exports `DCGM_FI_DEV_GPU_UTIL` and the `DCGM_FI_PROF_*` fields of a whole GPU with one label
set, and a query over both names whose function drops `__name__` is refused by Prometheus
(HTTP 422, "vector cannot contain metrics with the same labelset"). Against a real Prometheus
holding exactly that."""
from datetime import datetime, timezone
from urllib.parse import urlsplit

import pytest
import requests

from apps.accounting.models import UsageHour
from apps.ingest.pipeline import DEFAULT_CHUNK_HOURS, ingest
from apps.ingest.prometheus import PrometheusClient
from apps.ingest.queries import MetricNames
from apps.simulator.emit import SimSeries

from tests.support.prom import served_series
from tests.support.factories import make_cluster

T0 = 1_788_220_800          # 2026-09-01 00:00 UTC
H = 3600
NAMES = MetricNames(gpu_util="DCGM_FI_DEV_GPU_UTIL", gr_engine_active="DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                    fb_used="DCGM_FI_DEV_FB_USED", power="DCGM_FI_DEV_POWER_USAGE",
                    temperature="DCGM_FI_DEV_GPU_TEMP", xid="DCGM_FI_DEV_XID_ERRORS")
# dcgm-exporter 4.x's label set on a whole GPU held by a pod (docs/ingest.md)
WHOLE = {"gpu": "0", "UUID": "GPU-2d7f5c3e-9b1a-4e0c-8f6d-1a2b3c4d5e6f", "pci_bus_id": "00000000:18:00.0",
         "device": "nvidia0", "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "gpu-node-1",
         "DCGM_FI_DRIVER_VERSION": "570.124.06", "container": "trainer", "namespace": "ml", "pod": "train-0",
         "instance": "10.0.0.11:9400", "job": "nvidia-dcgm-exporter"}
MIG = {"gpu": "1", "UUID": "GPU-7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d", "pci_bus_id": "00000000:2a:00.0",
       "device": "nvidia1", "modelName": "NVIDIA A100-SXM4-80GB", "GPU_I_PROFILE": "3g.40gb", "GPU_I_ID": "1",
       "Hostname": "gpu-node-1", "DCGM_FI_DRIVER_VERSION": "570.124.06", "container": "nb", "namespace": "lab",
       "pod": "nb-0", "instance": "10.0.0.11:9400", "job": "nvidia-dcgm-exporter"}


def _history(hours: int = 3):
    """A whole H100 at 50 % and an A100 3g.40gb instance at 0.25, 60 s scrapes starting 30 s
    into the hour, every dcp-metrics-included field a real exporter sends for each."""
    n = hours * 60
    ts = [T0 + 30 + 60 * i for i in range(n)]
    whole = {"DCGM_FI_DEV_GPU_UTIL": 50.0, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.5, "DCGM_FI_PROF_SM_ACTIVE": 0.45,
             "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.2, "DCGM_FI_PROF_DRAM_ACTIVE": 0.3, "DCGM_FI_DEV_FB_USED": 40000.0,
             "DCGM_FI_DEV_FB_FREE": 41559.0, "DCGM_FI_DEV_POWER_USAGE": 350.0, "DCGM_FI_DEV_GPU_TEMP": 55.0,
             "DCGM_FI_DEV_XID_ERRORS": 0.0}
    mig = {"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.25, "DCGM_FI_PROF_SM_ACTIVE": 0.2, "DCGM_FI_DEV_FB_USED": 9000.0,
           "DCGM_FI_DEV_FB_FREE": 31000.0}
    return ([SimSeries(m, dict(WHOLE), [(t, v) for t in ts]) for m, v in whole.items()]
            + [SimSeries(m, dict(MIG), [(t, v) for t in ts]) for m, v in mig.items()])


@pytest.mark.prometheus
def test_the_question_that_sizes_chunks_is_answered_when_both_fields_share_labels(tmp_path):
    """Failed with HTTP 422 before: one selector over both names inside count_over_time.
    Each hour holds 60 whole-GPU GPU_UTIL samples and 60 MIG GR_ENGINE_ACTIVE samples; the
    whole GPU's own GR_ENGINE_ACTIVE is not what ingest reads for it, so it is not counted."""
    with served_series(_history(), tmp_path) as server:
        assert PrometheusClient(server.url).busiest_hour(NAMES, T0, T0 + 3 * H) == 120.0


@pytest.mark.prometheus
@pytest.mark.django_db
@pytest.mark.parametrize("aggregate", [True, False])
def test_every_query_ingest_sends_is_accepted(settings, tmp_path, monkeypatch, aggregate):
    """Ingest with its chunks sized from Prometheus, every query recorded as it goes out, then
    each one sent again: all answered 200. The figures by hand: the H100 held 3 h by ml at
    50 % (3 GPU-h, 1.5 used); the 3g.40gb instance 3 h by lab at 0.25 (3 × 3/7 GPU-h =
    1.285714, 0.321429 used, 3 MIG-h)."""
    settings.INGEST_CHUNK_HOURS = 0
    settings.INGEST_PROMETHEUS_AGGREGATES = aggregate
    sent = []
    send = requests.Session.request

    def recording(self, method, url, *args, **kwargs):
        params = kwargs.get("params") or {}
        if "/api/v1/query" in url and "query" in params:
            sent.append((url, dict(params)))
        return send(self, method, url, *args, **kwargs)

    monkeypatch.setattr(requests.Session, "request", recording)
    with served_series(_history(), tmp_path) as server:
        cluster = make_cluster(f"shipped-{aggregate}", prometheus_url=server.url)
        run = ingest(cluster, datetime.fromtimestamp(T0, tz=timezone.utc),
                     datetime.fromtimestamp(T0 + 3 * H, tz=timezone.utc), now=datetime(2026, 11, 28, tzinfo=timezone.utc))
        assert run.status == "succeeded", run.error
        monkeypatch.setattr(requests.Session, "request", send)
        queries = {(urlsplit(url).path, params["query"]): params for url, params in sent}
        assert any("count_over_time" in q for _, q in queries)
        for (path, query), params in queries.items():
            answer = requests.get(server.url + path, params=params, timeout=30)
            assert answer.status_code == 200, (query, answer.text[:300])
    rows = UsageHour.objects.filter(cluster=cluster)
    by_ns = {}
    for r in rows:
        g, u, m = by_ns.get(r.namespace, (0.0, 0.0, 0.0))
        by_ns[r.namespace] = (g + r.gpu_seconds, u + r.used_gpu_seconds, m + r.mig_seconds)
    assert by_ns["ml"] == pytest.approx((3 * H, 1.5 * H, 0.0))
    assert by_ns["lab"] == pytest.approx((3 * H * 3 / 7, 3 * H * 3 / 7 * 0.25, 3 * H))


@pytest.mark.prometheus
@pytest.mark.django_db
def test_a_refused_planning_query_falls_back_and_says_so(settings, tmp_path, monkeypatch):
    """A Prometheus (or a store in front of it) that refuses the question that sizes the chunks:
    the run reads the window in DEFAULT_CHUNK_HOURS chunks after its first hour, and its log says
    why. Here the refusal is real: the query sent is one Prometheus cannot parse."""
    settings.INGEST_CHUNK_HOURS = 0
    monkeypatch.setattr(PrometheusClient, "busiest_hour_query", lambda self, names, start, end: "sum(")
    with served_series(_history(5), tmp_path) as server:
        cluster = make_cluster("refuses-plans", prometheus_url=server.url)
        run = ingest(cluster, datetime.fromtimestamp(T0, tz=timezone.utc),
                     datetime.fromtimestamp(T0 + 5 * H, tz=timezone.utc), now=datetime(2026, 11, 28, tzinfo=timezone.utc))
    assert run.status == "succeeded", run.error
    assert run.chunks_total == 1 + 4 // DEFAULT_CHUNK_HOURS     # 1 h, then 2 h + 2 h
    assert any("the question that sizes them failed" in w and "HTTP 400" in w for w in run.warnings), run.warnings
    assert sum(r.gpu_seconds for r in UsageHour.objects.filter(cluster=cluster, namespace="ml")) == pytest.approx(5 * H)


def test_the_query_counts_each_metric_on_its_own():
    """No selector spans two metric names: each term names one metric."""
    query = PrometheusClient("http://prometheus.invalid").busiest_hour_query(NAMES, T0, T0 + 6 * H)
    assert "__name__" not in query
    assert query.count("count_over_time(") == 3
