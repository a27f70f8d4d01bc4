"""Stream series to an OpenMetrics file that `promtool tsdb create-blocks-from` accepts.

OpenMetrics wants every family's lines together under one `# TYPE` line, but series come
device by device (families interleaved). Each family is spooled to its own temporary file
and the files are concatenated at the end, so memory stays flat however big the history.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable

# Everything is declared gauge: an OpenMetrics counter family would need a `_total` suffix,
# which DCGM's energy counter does not have. PromQL's rate() works on it all the same.
FAMILY_TYPE = "gauge"


def escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def format_value(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def series_prefix(metric: str, labels: dict[str, str]) -> str:
    if not labels:
        return metric
    body = ",".join(f'{k}="{escape_label_value(v)}"' for k, v in labels.items())
    return f"{metric}{{{body}}}"


def write_openmetrics(series_iter: Iterable, path) -> int:
    """Write all series to one file at `path`; returns the number of samples written."""
    path = Path(path)
    written = _write(series_iter, path.parent, lambda chunk: path, chunk_seconds=None)
    return sum(written.values())


def write_openmetrics_chunks(series_iter: Iterable, out_dir, chunk_seconds: int = 2 * 3600) -> dict[Path, int]:
    """Write one file per time chunk (aligned to multiples of chunk_seconds since the epoch).

    promtool 2.42 re-reads its whole input once per 2 h block, so a week in one file is
    read 84 times; chunk files aligned to block boundaries keep the backfill linear and
    can be fed to several promtool processes at once. Returns {path: sample count}.
    """
    out_dir = Path(out_dir)
    return _write(series_iter, out_dir, lambda chunk: out_dir / f"chunk-{chunk:08d}.om", chunk_seconds)


def _write(series_iter: Iterable, directory: Path, path_of_chunk, chunk_seconds: int | None) -> dict[Path, int]:
    directory.mkdir(parents=True, exist_ok=True)
    spool_dir = Path(tempfile.mkdtemp(prefix=".om-spool-", dir=directory))
    spools: dict[tuple[int, str], object] = {}  # (chunk, family) -> spool file, in first-seen order
    counts: dict[int, int] = {}
    try:
        for series in series_iter:
            if not series.samples:
                continue
            prefix = series_prefix(series.metric, series.labels)
            if chunk_seconds is None:
                groups = {0: series.samples}
            else:
                groups = {}
                for sample in series.samples:
                    groups.setdefault(int(sample[0]) // chunk_seconds, []).append(sample)
            for chunk, samples in groups.items():
                out = spools.get((chunk, series.metric))
                if out is None:
                    out = open(spool_dir / f"{len(spools):06d}.om", "w", buffering=1 << 18)
                    spools[(chunk, series.metric)] = out
                out.write("".join(f"{prefix} {format_value(v)} {ts}\n" for ts, v in samples))
                counts[chunk] = counts.get(chunk, 0) + len(samples)
        written: dict[Path, int] = {}
        for chunk in sorted(counts):
            path = path_of_chunk(chunk)
            tmp_path = path.with_name(path.name + ".tmp")
            with open(tmp_path, "w", buffering=1 << 20) as final:
                for (spool_chunk, metric), spool in spools.items():
                    if spool_chunk != chunk:
                        continue
                    spool.close()
                    final.write(f"# TYPE {metric} {FAMILY_TYPE}\n")
                    with open(spool.name) as src:
                        shutil.copyfileobj(src, final, 1 << 20)
                    os.unlink(spool.name)  # free the disk as we go: spools double the footprint
                final.write("# EOF\n")
            os.replace(tmp_path, path)  # a half-written file never carries the final name
            written[path] = counts[chunk]
        if not counts and chunk_seconds is None:
            path = path_of_chunk(0)
            path.write_text("# EOF\n")
            written[path] = 0
    finally:
        for spool in spools.values():
            spool.close()
        shutil.rmtree(spool_dir, ignore_errors=True)
    return written
