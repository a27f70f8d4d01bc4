"""OpenMetrics output that promtool accepts, and a real Prometheus answering over it."""
import pytest
import requests

from apps.simulator.emit import SimSeries, iter_series
from apps.simulator.expected import expected_figures
from apps.simulator.openmetrics import write_openmetrics
from apps.simulator.promserver import (PrometheusServer, PrometheusUnavailable, backfill, find_binaries,
                                       serve_scenario)
from apps.simulator.run import run_simulate
from apps.simulator.builders import build_scenario

from .conftest import HOUR_START, tiny_scenario

try:
    find_binaries()
    missing = None
except PrometheusUnavailable as exc:
    missing = str(exc)
pytestmark = [pytest.mark.prometheus, pytest.mark.skipif(missing is not None, reason=missing or "")]


def query(url, promql, at):
    body = requests.get(f"{url}/api/v1/query", params={"query": promql, "time": at}, timeout=30).json()
    assert body["status"] == "success", body
    return body["data"]["result"]


def scalar(url, promql, at):
    result = query(url, promql, at)
    assert len(result) == 1, result
    return float(result[0]["value"][1])


def test_openmetrics_file_shape(tmp_path):
    path = tmp_path / "tiny.om"
    count = write_openmetrics(iter_series(tiny_scenario()), path)
    text = path.read_text()
    assert text.endswith("# EOF\n")
    type_lines = [line for line in text.splitlines() if line.startswith("# TYPE")]
    assert len(type_lines) == len(set(type_lines))  # each family declared once, its lines together
    assert count == sum(1 for line in text.splitlines() if not line.startswith("#"))


def test_promtool_accepts_escaped_values_and_rejects_garbage(tmp_path):
    odd = SimSeries("sim_escape_check", {"value": 'a"b\\c\nd'}, [(HOUR_START, 1.0), (HOUR_START + 60, 2.5)])
    write_openmetrics([odd], tmp_path / "odd.om")
    assert backfill(tmp_path / "odd.om", tmp_path / "tsdb").block_count == 1
    with PrometheusServer(tmp_path / "tsdb") as prom:
        (series,) = query(prom.url, "sim_escape_check[5m]", HOUR_START + 60)
        assert series["metric"]["value"] == 'a"b\\c\nd'
    (tmp_path / "bad.om").write_text("not openmetrics at all\n")
    with pytest.raises(PrometheusUnavailable, match="promtool backfill"):
        backfill(tmp_path / "bad.om", tmp_path / "tsdb-bad")


def test_end_to_end_sample_counts_and_allocation(tmp_path):
    """The backfilled history holds every sample; PromQL counts agree with the oracle."""
    scenario = build_scenario(hours=3, interval_seconds=60, spelling="exported", seed=11, start=HOUR_START)
    expected = expected_figures(scenario)
    samples = len(scenario.timestamps)
    whole = [d for d in scenario.devices if not d.is_mig]
    mig = [d for d in scenario.devices if d.is_mig]
    at, span = scenario.end - 1, f"{scenario.end - scenario.start}s"
    with serve_scenario(scenario, tmp_path) as prom:
        assert scalar(prom.url, f"count(count_over_time(DCGM_FI_DEV_GPU_UTIL[{span}]))", at) >= len(whole)
        assert scalar(prom.url, f"sum(count_over_time(DCGM_FI_DEV_GPU_UTIL[{span}]))", at) == len(whole) * samples
        # a whole GPU exports GR_ENGINE_ACTIVE too: only a MIG instance's counts as its utilization
        mig_util = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_PROFILE!=""}'
        assert scalar(prom.url, f"sum(count_over_time({mig_util}[{span}]))", at) == len(mig) * samples
        # allocated and used GPU-seconds per namespace, rebuilt from the raw samples
        allocated, used = {}, {}
        for metric, util_scale in (('DCGM_FI_DEV_GPU_UTIL{exported_namespace!=""}', 0.01),
                                   ('DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_PROFILE!="",exported_namespace!=""}', 1.0)):
            for fn, into, scale in (("count_over_time", allocated, 1.0), ("sum_over_time", used, util_scale)):
                rows = query(prom.url, f'sum by (exported_namespace, modelName, GPU_I_PROFILE) '
                                       f'({fn}({metric}[{span}]))', at)
                for row in rows:
                    labels, value = row["metric"], float(row["value"][1])
                    profile = labels.get("GPU_I_PROFILE")
                    fraction = 1.0 if not profile else int(profile[0]) / (4 if "A30" in labels["modelName"] else 7)
                    ns = labels["exported_namespace"]
                    into[ns] = into.get(ns, 0.0) + value * scale * scenario.interval_seconds * fraction
        assert allocated == pytest.approx(expected.allocated_gpu_seconds)
        assert used == pytest.approx(expected.used_gpu_seconds)
        pending = scalar(prom.url, f'sum(count_over_time(kube_pod_status_phase{{phase="Pending"}}[{span}]))', at)
        assert pending == sum(len([t for t in scenario.timestamps if p.start <= t < p.end]) for p in scenario.pending)
    # a second run reuses the cached blocks instead of writing and backfilling again
    (marker,) = tmp_path.glob("sim-*/.complete")
    built_at = marker.stat().st_mtime_ns
    with serve_scenario(scenario, tmp_path) as prom:
        assert scalar(prom.url, f"sum(count_over_time(DCGM_FI_DEV_GPU_UTIL[{span}]))", at) == len(whole) * samples
    assert marker.stat().st_mtime_ns == built_at


def test_run_simulate_writes_file_and_blocks(tmp_path):
    result = run_simulate(tmp_path / "out", hours=1, interval_seconds=60, spelling="old", seed=2)
    assert result.sample_count > 0 and list(result.openmetrics_dir.glob("chunk-*.om"))
    assert any((p / "meta.json").exists() for p in result.tsdb_dir.iterdir())
    assert (tmp_path / "out" / "scenario.json").exists()


def test_chunked_files_split_on_block_boundaries(tmp_path):
    from apps.simulator.openmetrics import write_openmetrics_chunks

    chunks = write_openmetrics_chunks(iter_series(tiny_scenario()), tmp_path, chunk_seconds=3600)
    assert sum(chunks.values()) == write_openmetrics(iter_series(tiny_scenario()), tmp_path / "one.om")
    assert len(chunks) == 2  # the tiny scenario spans exactly two whole hours
    for path in chunks:
        hour = int(path.stem.split("-")[1])
        stamps = {int(line.rsplit(" ", 1)[1]) // 3600 for line in path.read_text().splitlines()
                  if not line.startswith("#")}
        assert stamps == {hour}


def test_run_simulate_serve_runs_until_stopped(tmp_path):
    import io
    import re
    import threading
    import time

    stop, out, box = threading.Event(), io.StringIO(), {}
    worker = threading.Thread(target=lambda: box.update(result=run_simulate(
        tmp_path / "out", hours=1, interval_seconds=60, serve=True, stdout=out, stop_event=stop)))
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while not (match := re.search(r"at (http://127\.0\.0\.1:\d+)", out.getvalue())):
            assert time.monotonic() < deadline and worker.is_alive(), out.getvalue()
            time.sleep(0.1)
        assert requests.get(match.group(1) + "/-/ready", timeout=5).status_code == 200
    finally:
        stop.set()
        worker.join(30)
    assert not worker.is_alive() and box["result"].sample_count > 0
    with pytest.raises(requests.ConnectionError):
        requests.get(match.group(1) + "/-/ready", timeout=5)
