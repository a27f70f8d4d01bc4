"""The `simulate` command's logic, callable without Django (tests, scripts, make demo)."""
from __future__ import annotations

import json
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .builders import build_scenario
from .emit import iter_series
from .exporter import DEFAULT_COUNTERS, DEFAULT_VERSION
from .openmetrics import write_openmetrics_chunks
from .promserver import PrometheusServer, backfill_many


@dataclass
class SimulateResult:
    openmetrics_dir: Path
    tsdb_dir: Path
    sample_count: int
    start: int
    end: int
    write_seconds: float
    backfill_seconds: float

    @property
    def backfill_samples_per_second(self) -> float:
        return self.sample_count / self.backfill_seconds if self.backfill_seconds else 0.0


def run_simulate(out_dir, hours: float = 6, interval_seconds: int = 30, spelling: str = "plain",
                 seed: int = 1, hostname_label: str | None = None, time_slicing: bool = False,
                 counters: str = DEFAULT_COUNTERS, exporter_version: str = DEFAULT_VERSION,
                 serve: bool = False, port: int | None = None, stdout=None,
                 stop_event: threading.Event | None = None) -> SimulateResult:
    """Write the OpenMetrics file and TSDB blocks under out_dir; with serve, run Prometheus
    in the foreground until interrupted (or until stop_event is set, for tests)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    say = (lambda msg: stdout.write(msg + "\n")) if stdout else (lambda msg: None)
    scenario = build_scenario(hours=hours, interval_seconds=interval_seconds, spelling=spelling,
                              seed=seed, hostname_label=hostname_label, time_slicing=time_slicing,
                              counters=counters, exporter_version=exporter_version)
    om_dir = out_dir / "openmetrics"
    tsdb_dir = out_dir / "tsdb"
    for existing in (om_dir, tsdb_dir):
        if existing.exists() and any(existing.iterdir()):
            raise FileExistsError(f"{existing} is not empty; choose a fresh --out directory")
    started = time.monotonic()
    # One file per 2 h block window: promtool 2.42 re-reads a whole file once per block.
    chunks = write_openmetrics_chunks(iter_series(scenario), om_dir)
    samples = sum(chunks.values())
    write_seconds = time.monotonic() - started
    result = backfill_many(list(chunks), tsdb_dir)
    outcome = SimulateResult(om_dir, tsdb_dir, samples, scenario.start, scenario.end,
                             write_seconds, result.seconds)
    (out_dir / "scenario.json").write_text(json.dumps(
        {"name": scenario.name, "start": scenario.start, "end": scenario.end,
         "interval_seconds": scenario.interval_seconds, "spelling": scenario.spelling,
         "seed": scenario.seed, "samples": samples}, indent=2) + "\n")
    say(f"wrote {samples} samples to {len(chunks)} files in {om_dir} in {write_seconds:.1f}s; "
        f"backfilled {result.block_count} blocks into {tsdb_dir} in {result.seconds:.1f}s "
        f"({outcome.backfill_samples_per_second:,.0f} samples/s)")
    if serve:
        stop_event = stop_event or threading.Event()
        with PrometheusServer(tsdb_dir, port=port) as prom:
            say(f"Prometheus serving {scenario.start}..{scenario.end} at {prom.url} (Ctrl-C to stop)")
            previous = None
            if threading.current_thread() is threading.main_thread():
                previous = signal.signal(signal.SIGTERM, lambda *_: stop_event.set())
            try:
                while not stop_event.wait(0.5):
                    if prom.process.poll() is not None:
                        raise RuntimeError(f"prometheus exited:\n{prom.log_tail()}")
            except KeyboardInterrupt:
                pass
            finally:
                if previous is not None:
                    signal.signal(signal.SIGTERM, previous)
    return outcome
