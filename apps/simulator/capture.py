"""Replay one `/metrics` capture as a Prometheus history.

A capture (what `curl exporter:9400/metrics` printed once) shows what an exporter really emits:
which fields, which label names in which order, which labels are empty or missing. The
simulator's own series follow what the docs record (docs/demo.md, "The simulated exporter");
a capture is the thing itself. Replayed as a history (every sample repeated at each scrape of a
window) and backfilled into a real Prometheus, it lets a test ingest exactly those label sets
and check the figures by hand (tests/ingest/test_corpus.py, the fixtures and how to run a
folder of real captures in tests/ingest/corpus/README.md).

The parser reads the Prometheus text exposition format line by line: `# HELP`, `# TYPE` and
other comments are skipped; label values may hold escaped quotes, backslashes, newlines,
commas and `=`; a sample may end with a timestamp (ignored: the replay sets its own). A line
that is not a sample raises `CaptureError`, one line naming the file, the line number and what
is wrong. A sample whose value is not a number (`N/A`, or none at all) makes Prometheus reject
the whole scrape, so by default (`strict=True`) it raises too; with `strict=False` it is left
out and recorded in `Capture.rejected`. (prometheus_client's parser, which ingest uses for
Prometheus' own `/metrics`, reads a whole text without line numbers and accepts lines a scrape
refuses, such as a third field after the timestamp: no use for saying which line is wrong.)
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

from .emit import SimSeries

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# What Go's strconv.ParseFloat, which Prometheus' parser calls, accepts in practice.
_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)", re.I)
_TIMESTAMP = re.compile(r"-?\d+")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


class CaptureError(ValueError):
    """A line of a capture that Prometheus would not scrape; the message is one line."""


@dataclass(frozen=True)
class Sample:
    metric: str
    labels: dict[str, str]   # in the order the line wrote them
    value: float
    line: int


@dataclass
class Capture:
    name: str
    samples: list[Sample] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)   # (line number, reason)

    def series(self, start: int, hours: float, interval_seconds: int = 30,
               add_labels: Mapping[str, str] | Callable[[str], Mapping[str, str]] | None = None
               ) -> list[SimSeries]:
        """Each sample scraped every `interval_seconds` from `start` (unix seconds) for `hours`,
        its value constant. A constant counter (`*_total`, `TOTAL_ENERGY_CONSUMPTION`) is
        non-decreasing, so no reset is ever seen. Labels are kept in the capture's order, but a
        label with an empty value is dropped, as a scrape drops it. `add_labels` (a mapping, or
        a function of the metric name giving one) adds the target labels Prometheus attaches
        (`instance`, `job`) where the sample lacks them."""
        times = [start + k * interval_seconds for k in range(int(hours * 3600 // interval_seconds))]
        out = []
        for s in self.samples:
            extra = add_labels(s.metric) if callable(add_labels) else (add_labels or {})
            labels = {k: v for k, v in s.labels.items() if v != ""}
            labels.update({k: v for k, v in extra.items() if k not in labels})
            out.append(SimSeries(s.metric, labels, [(t, s.value) for t in times]))
        return out


def read_capture(text: str, name: str, strict: bool = True) -> Capture:
    """Parse a capture's text; `name` (the file's) goes into every error message."""
    capture = Capture(name)
    seen: set[tuple] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        metric, labels, value, problem = _sample(stripped, f"{name}:{number}")
        key = (metric, tuple(sorted((k, v) for k, v in labels.items() if v != "")))
        if problem is None and key in seen:
            problem = f"{metric}: the same series again (Prometheus keeps the first)"
        if problem is not None:
            if strict:
                raise CaptureError(f"{name}:{number}: {problem}")
            capture.rejected.append((number, problem))
            continue
        seen.add(key)
        capture.samples.append(Sample(metric, labels, value, number))
    return capture


def _sample(line: str, where: str) -> tuple[str, dict[str, str], float, str | None]:
    """(metric, labels, value, None), or with the reason the value cannot be scraped last;
    raises CaptureError for a line that is no sample at all."""
    m = _NAME.match(line)
    if not m:
        raise CaptureError(f"{where}: no metric name at the start of the line")
    metric, pos = m.group(0), m.end()
    labels: dict[str, str] = {}
    if pos < len(line) and line[pos] == "{":
        labels, pos = _labels(line, pos + 1, where, metric)
    rest = line[pos:]
    if rest and not rest[0].isspace():
        raise CaptureError(f"{where}: {metric}: unexpected {rest[:20]!r} after the "
                           f"{'labels' if labels else 'name'}")
    tokens = rest.split()
    if not tokens:
        return metric, labels, 0.0, f"{metric}: no value"
    if not _NUMBER.fullmatch(tokens[0]):
        return metric, labels, 0.0, f"{metric}: value {tokens[0][:20]!r} is not a number"
    if len(tokens) > 2:
        raise CaptureError(f"{where}: {metric}: {len(tokens)} fields after the labels, at most value and timestamp")
    if len(tokens) == 2 and not _TIMESTAMP.fullmatch(tokens[1]):
        raise CaptureError(f"{where}: {metric}: timestamp {tokens[1][:20]!r} is not an integer")
    return metric, labels, float(tokens[0]), None


def _labels(line: str, pos: int, where: str, metric: str) -> tuple[dict[str, str], int]:
    """The labels from just after `{` to the closing `}`, and the position after it."""
    labels: dict[str, str] = {}
    while True:
        while pos < len(line) and line[pos] in " \t":
            pos += 1
        if pos < len(line) and line[pos] == "}":
            return labels, pos + 1
        m = _LABEL.match(line, pos)
        if not m:
            raise CaptureError(f"{where}: {metric}: bad label name at column {pos + 1}")
        key, pos = m.group(0), m.end()
        if key in labels:
            raise CaptureError(f"{where}: {metric}: label {key!r} twice")
        if line[pos:pos + 2] != '="':
            raise CaptureError(f'{where}: {metric}: label {key!r} is not followed by ="')
        pos += 2
        value = []
        while True:
            if pos >= len(line):
                raise CaptureError(f"{where}: {metric}: the value of label {key!r} is not closed")
            ch = line[pos]
            if ch == '"':
                pos += 1
                break
            if ch == "\\":
                nxt = line[pos + 1:pos + 2]
                if nxt not in _ESCAPES:
                    raise CaptureError(f"{where}: {metric}: bad escape in the value of label {key!r}")
                value.append(_ESCAPES[nxt])
                pos += 2
                continue
            value.append(ch)
            pos += 1
        labels[key] = "".join(value)
        while pos < len(line) and line[pos] in " \t":
            pos += 1
        if pos < len(line) and line[pos] == ",":
            pos += 1
        elif pos >= len(line) or line[pos] != "}":
            raise CaptureError(f"{where}: {metric}: expected , or }} after the value of label {key!r}")
