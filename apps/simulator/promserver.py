"""A real Prometheus over a backfilled TSDB: promtool to build blocks, prometheus to serve.

No mocks: tests and the demo query the same HTTP API that a production cluster answers.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

PROMETHEUS_BINARY = os.environ.get("SIM_PROMETHEUS_BINARY", "/usr/bin/prometheus")
PROMTOOL_BINARY = os.environ.get("SIM_PROMTOOL_BINARY", "/usr/bin/promtool")
# Without any scrape targets Prometheus only serves what the blocks hold.
_MINIMAL_CONFIG = "global:\n  scrape_interval: 1h\n  evaluation_interval: 1h\nscrape_configs: []\n"


class PrometheusUnavailable(RuntimeError):
    """The binaries are missing, promtool rejected the input, or the server never got ready."""


@dataclass(frozen=True)
class Binaries:
    prometheus: str
    promtool: str


def find_binaries() -> Binaries:
    found = {}
    for name, configured in (("prometheus", PROMETHEUS_BINARY), ("promtool", PROMTOOL_BINARY)):
        path = configured if os.access(configured, os.X_OK) else shutil.which(name)
        if not path:
            raise PrometheusUnavailable(
                f"{name} not found (looked at {configured} and on PATH); install Debian's "
                f"'prometheus' package or set SIM_{name.upper()}_BINARY")
        found[name] = path
    return Binaries(**found)


def _promtool_flags(promtool: str) -> set[str]:
    """promtool grew --max-block-duration in 2.43; ask it rather than guess from a version."""
    result = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", "--help"],
                            capture_output=True, text=True)
    text = result.stdout + result.stderr
    return {flag for flag in ("--max-block-duration", "--quiet") if flag in text}


@dataclass
class BackfillResult:
    tsdb_dir: Path
    seconds: float
    block_count: int


def backfill(openmetrics_path, tsdb_dir, max_block_duration: str | None = "24h") -> BackfillResult:
    """Turn an OpenMetrics file into TSDB blocks under `tsdb_dir`.

    promtool re-reads the whole input once per block window, so longer blocks load long
    histories much faster; on promtool 2.42 the flag does not exist and blocks are 2 h.
    """
    binaries = find_binaries()
    tsdb_dir = Path(tsdb_dir)
    tsdb_dir.mkdir(parents=True, exist_ok=True)
    flags = _promtool_flags(binaries.promtool)
    cmd = [binaries.promtool, "tsdb", "create-blocks-from", "openmetrics"]
    if "--quiet" in flags:
        cmd.append("--quiet")
    if max_block_duration and "--max-block-duration" in flags:
        cmd.append(f"--max-block-duration={max_block_duration}")
    cmd += [str(openmetrics_path), str(tsdb_dir)]
    started = time.monotonic()
    result = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        raise PrometheusUnavailable(
            f"promtool backfill of {openmetrics_path} failed (exit {result.returncode}): "
            f"{(result.stderr or result.stdout).strip()[-2000:]}")
    blocks = [p for p in tsdb_dir.iterdir() if (p / "meta.json").exists()]
    return BackfillResult(tsdb_dir, elapsed, len(blocks))


def backfill_many(openmetrics_paths, tsdb_dir, parallel: int | None = None,
                  max_block_duration: str | None = "24h") -> BackfillResult:
    """Backfill several chunk files, `parallel` promtool processes at a time.

    Each run writes into its own scratch directory, then its blocks move into tsdb_dir,
    so concurrent promtools never see each other's half-written blocks.
    """
    from concurrent.futures import ThreadPoolExecutor

    tsdb_dir = Path(tsdb_dir)
    tsdb_dir.mkdir(parents=True, exist_ok=True)
    paths = [Path(p) for p in openmetrics_paths]
    # promtool is itself multi-threaded (parsing, GC, compaction): measured on 2 cores, two
    # at once were slower than one, so use half the cores.
    parallel = parallel or max(1, min(len(paths), (os.cpu_count() or 1) // 2))
    started = time.monotonic()

    def one(index_path):
        index, path = index_path
        scratch = tsdb_dir / f".backfill-{index:06d}"
        shutil.rmtree(scratch, ignore_errors=True)
        backfill(path, scratch, max_block_duration)
        for block in scratch.iterdir():
            if (block / "meta.json").exists():
                os.replace(block, tsdb_dir / block.name)
        shutil.rmtree(scratch, ignore_errors=True)

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        list(pool.map(one, enumerate(paths)))  # list() re-raises the first promtool failure
    blocks = [p for p in tsdb_dir.iterdir() if (p / "meta.json").exists()]
    return BackfillResult(tsdb_dir, time.monotonic() - started, len(blocks))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    """`with PrometheusServer(tsdb_dir) as prom: requests.get(prom.url + "/api/v1/query", ...)`"""

    def __init__(self, tsdb_dir, port: int | None = None, ready_timeout_seconds: float = 60.0):
        self.tsdb_dir = Path(tsdb_dir)
        self.port = port
        self.ready_timeout_seconds = ready_timeout_seconds
        self.process: subprocess.Popen | None = None
        self._rundir: Path | None = None
        self._log = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("PrometheusServer is not started")
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path | None:
        return self._rundir / "prometheus.log" if self._rundir else None

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_path or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def start(self) -> "PrometheusServer":
        binaries = find_binaries()
        self._rundir = Path(tempfile.mkdtemp(prefix="sim-prometheus-"))
        config = self._rundir / "prometheus.yml"
        config.write_text(_MINIMAL_CONFIG)
        if self.port is None:
            self.port = free_port()
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [binaries.prometheus, f"--config.file={config}", f"--storage.tsdb.path={self.tsdb_dir}",
             # the history is days old and must not be expired by the default 15 d retention
             "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout_seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PrometheusUnavailable(
                    f"prometheus exited with {self.process.returncode} before it was ready:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.1)
        raise PrometheusUnavailable(
            f"prometheus on {self.url} not ready after {self.ready_timeout_seconds:.0f}s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log:
            self._log.close()
            self._log = None
        if self._rundir:
            shutil.rmtree(self._rundir, ignore_errors=True)
            self._rundir = None

    def __enter__(self) -> "PrometheusServer":
        # serve_scenario() hands back a running server; entering it must not start another
        return self if self.process is not None and self.process.poll() is None else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def prepare_tsdb(scenario, workdir, max_block_duration: str | None = "24h") -> Path:
    """Write and backfill the scenario once; later calls with equal parameters reuse it.

    The cache key is the scenario's fingerprint, so any change to devices, pods or seeds
    builds a fresh TSDB. A `.complete` marker guards against a half-built directory.
    """
    from .emit import iter_series
    from .openmetrics import write_openmetrics_chunks

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    cache_dir = workdir / f"{scenario.name}-{scenario.fingerprint()}"
    tsdb_dir = cache_dir / "tsdb"
    # Parallel test workers may ask for the same scenario: one builds, the others wait.
    with open(workdir / f".{cache_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (cache_dir / ".complete").exists():
            return tsdb_dir
        shutil.rmtree(cache_dir, ignore_errors=True)
        cache_dir.mkdir(parents=True)
        chunks = write_openmetrics_chunks(iter_series(scenario), cache_dir / "openmetrics")
        backfill_many(list(chunks), tsdb_dir, max_block_duration=max_block_duration)
        shutil.rmtree(cache_dir / "openmetrics")  # the blocks hold it all now; the text is the bulk of the disk
        (cache_dir / ".complete").write_text("ok\n")
    return tsdb_dir


def serve_scenario(scenario, workdir, port: int | None = None) -> PrometheusServer:
    """Write → backfill (cached) → a started server; use it as a context manager to stop it.

    Prometheus writes into its TSDB directory (WAL, compaction), so the server runs on a
    private copy and the cached blocks stay pristine for the next run.
    """
    cached = prepare_tsdb(scenario, workdir)
    live = Path(tempfile.mkdtemp(prefix="sim-tsdb-", dir=workdir))
    for block in cached.iterdir():
        if (block / "meta.json").exists():
            # Hard links: Prometheus never rewrites block files in place, it writes new
            # blocks and deletes old directories, so the cache cannot be corrupted.
            shutil.copytree(block, live / block.name, copy_function=os.link)
    server = _OwnedDirServer(live, port=port)
    return server.start()


class _OwnedDirServer(PrometheusServer):
    """A server that deletes its private TSDB copy when it stops."""

    def stop(self) -> None:
        super().stop()
        shutil.rmtree(self.tsdb_dir, ignore_errors=True)
