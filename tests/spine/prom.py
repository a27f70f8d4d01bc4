"""Real Prometheus over simulator data, shared by the end-to-end tests."""
import contextlib
from pathlib import Path

import pytest

CACHE = Path(__file__).resolve().parents[2] / "var" / "test-prometheus"


@contextlib.contextmanager
def served(scenario):
    from apps.simulator.promserver import PrometheusUnavailable, find_binaries, serve_scenario

    try:
        find_binaries()
    except PrometheusUnavailable as exc:  # make test installs it; a bare pytest run may not have it
        pytest.skip(str(exc))
    CACHE.mkdir(parents=True, exist_ok=True)
    with serve_scenario(scenario, CACHE) as server:
        yield server


@contextlib.contextmanager
def served_series(series, workdir):
    """A real Prometheus holding exactly `series` (SimSeries: metric, labels, samples), backfilled
    with promtool into `workdir`: for label sets and timings written out by hand in a test."""
    from apps.simulator.openmetrics import write_openmetrics_chunks
    from apps.simulator.promserver import PrometheusServer, PrometheusUnavailable, backfill_many, find_binaries

    try:
        find_binaries()
    except PrometheusUnavailable as exc:
        pytest.skip(str(exc))
    workdir = Path(workdir)
    chunks = write_openmetrics_chunks(series, workdir / "openmetrics")
    backfill_many(list(chunks), workdir / "tsdb")
    with PrometheusServer(workdir / "tsdb") as server:
        yield server
