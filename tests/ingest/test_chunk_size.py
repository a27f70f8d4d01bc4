"""Ingest's chunks are sized from Prometheus (docs/ingest.md, "Chunks"): the utilization samples
of the window's busiest hour, and INGEST_CHUNK_SAMPLES, give the most hours (a divisor of a day,
up to 12) a chunk may hold; a set INGEST_CHUNK_HOURS or an answer that says nothing keeps a
fixed size."""
import threading
from datetime import datetime, timedelta, timezone

import pytest

from apps.ingest import pipeline
from apps.ingest.pipeline import DEFAULT_CHUNK_HOURS, ingest, sized_chunk_hours
from apps.ingest.prometheus import PrometheusClient
from apps.ingest.queries import MetricNames
from apps.simulator.builders import build_scenario
from apps.simulator.emit import SimSeries

from tests.support.prom import served, served_series
from tests.support.factories import make_cluster

T0 = 1_788_220_800          # 2026-09-01 00:00 UTC, a whole hour
H = 3600
NAMES = MetricNames(gpu_util="DCGM_FI_DEV_GPU_UTIL", gr_engine_active="DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                    fb_used="DCGM_FI_DEV_FB_USED", power="DCGM_FI_DEV_POWER_USAGE",
                    temperature="DCGM_FI_DEV_GPU_TEMP", xid="DCGM_FI_DEV_XID_ERRORS")


@pytest.mark.parametrize("per_hour, budget, hours", [
    (None, 200_000, DEFAULT_CHUNK_HOURS),   # Prometheus could not say
    (12_688, 200_000, 12),                  # 136 GPUs: 12 h hold 152,256 samples
    (86_864, 200_000, 2),                   # 1,000 GPUs: 2 h hold 173,728; 3 h would hold 260,592
    (20_000, 200_000, 8),                   # 10 h would fit, but chunks divide a day
    (250_000, 200_000, 1),                  # not even an hour fits: an hour it is
])
def test_the_most_hours_that_fit(settings, per_hour, budget, hours):
    settings.INGEST_CHUNK_SAMPLES = budget
    assert sized_chunk_hours(per_hour) == hours


def _series():
    """Two whole GPUs at 60 s for three hours, a MIG instance at 30 s in the third hour only, and
    power (not utilization: not counted). Samples sit half a scrape off the hour, so every hour
    holds 60 (and 120) of them whichever end of a range Prometheus' version includes."""
    gpus = [SimSeries("DCGM_FI_DEV_GPU_UTIL", {"UUID": f"GPU-{k}", "gpu": str(k), "cluster": "a"},
                      [(T0 + 30 + 60 * i, 50.0) for i in range(180)]) for k in range(2)]
    mig = SimSeries("DCGM_FI_PROF_GR_ENGINE_ACTIVE", {"UUID": "GPU-9", "GPU_I_PROFILE": "1g.10gb", "cluster": "b"},
                    [(T0 + 2 * H + 15 + 30 * j, 0.5) for j in range(120)])
    power = SimSeries("DCGM_FI_DEV_POWER_USAGE", {"UUID": "GPU-0", "gpu": "0", "cluster": "a"},
                      [(T0 + 30 + 60 * i, 300.0) for i in range(180)])
    return [*gpus, mig, power]


@pytest.mark.prometheus
def test_the_busiest_hour_counts_every_utilization_sample(tmp_path):
    with served_series(_series(), tmp_path) as server:
        # hours 1 and 2: 2 × 60; hour 3: 2 × 60 + 120
        assert PrometheusClient(server.url).busiest_hour(NAMES, T0, T0 + 3 * H) == 240.0
        # a cluster's own series only (its selector), and only hours with samples of it
        assert PrometheusClient(server.url, series_selector='cluster="a"').busiest_hour(NAMES, T0, T0 + 3 * H) == 120.0
        assert PrometheusClient(server.url).busiest_hour(NAMES, T0 + 5 * H, T0 + 7 * H) is None


@pytest.mark.prometheus
@pytest.mark.django_db
@pytest.mark.parametrize("budget, chunks", [(10**9, 2), (1, 6)])
def test_ingest_sizes_its_chunks_from_prometheus(settings, budget, chunks):
    """Six hours: when any size fits (12 hours), a first chunk of one (fetched while the rest is
    planned) and the five others in one; when none does, six of an hour."""
    settings.INGEST_CHUNK_HOURS = 0
    settings.INGEST_CHUNK_SAMPLES = budget
    scenario = build_scenario(name="chunks", hours=6, interval_seconds=60, seed=3)
    start = datetime.fromtimestamp(scenario.start, tz=timezone.utc)
    with served(scenario) as server:
        cluster = make_cluster(f"chunks-{budget}", prometheus_url=server.url)
        run = ingest(cluster, start, start + timedelta(hours=6))
    assert run.status == "succeeded"
    assert (run.chunks_total, run.chunks_done) == (chunks, chunks)


@pytest.mark.prometheus
@pytest.mark.django_db
def test_the_first_hour_is_fetched_while_the_rest_is_planned(settings, monkeypatch):
    """The question that sizes the chunks waits on Prometheus as long as the first chunk's
    queries do: ingest asks it only once the first hour's fetch is under way, and plans the
    window after that hour."""
    settings.INGEST_CHUNK_HOURS = 0
    settings.INGEST_PREFETCH = True
    events, first_started = [], threading.Event()
    make_fetcher, busiest_hour = pipeline.prometheus_fetcher, PrometheusClient.busiest_hour

    def prometheus_fetcher(*args, **kwargs):
        fetch = make_fetcher(*args, **kwargs)

        def fetched(window):
            events.append(("fetch", window.start, window.end))
            first_started.set()
            return fetch(window)
        return fetched

    def planned(client, names, start, end):
        # never set, were the plan asked before the first fetch began: the test fails here
        assert first_started.wait(10), "the chunks were planned before the first hour was fetched"
        events.append(("plan", int(start), int(end)))
        return busiest_hour(client, names, start, end)

    monkeypatch.setattr(pipeline, "prometheus_fetcher", prometheus_fetcher)
    monkeypatch.setattr(PrometheusClient, "busiest_hour", planned)
    scenario = build_scenario(name="first-hour", hours=6, interval_seconds=60, seed=3)
    start = scenario.start
    with served(scenario) as server:
        cluster = make_cluster("first-hour", prometheus_url=server.url)
        run = ingest(cluster, datetime.fromtimestamp(start, tz=timezone.utc),
                     datetime.fromtimestamp(start + 6 * H, tz=timezone.utc))
    assert run.status == "succeeded", run.error
    assert events == [("fetch", start, start + H), ("plan", start + H, start + 6 * H),
                      ("fetch", start + H, start + 6 * H)]
