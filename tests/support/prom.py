"""Real Prometheus over simulator data, shared by the end-to-end tests."""
import contextlib
import fcntl
import hashlib
import os
import shutil
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
    with promtool: for label sets and timings written out by hand in a test. The blocks are built
    once per content (a hash of the OpenMetrics text) under CACHE and the server runs on a
    hard-linked copy in `workdir` (docs/conventions.md, "How the suite stays fast")."""
    from apps.simulator.openmetrics import write_openmetrics_chunks
    from apps.simulator.promserver import PrometheusServer, PrometheusUnavailable, backfill_many, find_binaries

    try:
        find_binaries()
    except PrometheusUnavailable as exc:
        pytest.skip(str(exc))
    workdir = Path(workdir)
    chunks = sorted(write_openmetrics_chunks(series, workdir / "openmetrics"))
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk.name.encode() + b"\0" + chunk.read_bytes() + b"\0")
    cached = CACHE / f"series-{digest.hexdigest()[:20]}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{cached.name}.lock", "w") as lock:   # another xdist worker may be building it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (cached / ".complete").exists():
            shutil.rmtree(cached, ignore_errors=True)
            backfill_many(chunks, cached / "tsdb")
            (cached / ".complete").write_text("ok\n")
    live = workdir / "tsdb"
    for block in (cached / "tsdb").iterdir():
        if (block / "meta.json").exists():
            # Prometheus never rewrites a block's files in place, so hard links keep the cache pristine.
            shutil.copytree(block, live / block.name, copy_function=os.link)
    with PrometheusServer(live) as server:
        yield server
