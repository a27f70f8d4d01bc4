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
