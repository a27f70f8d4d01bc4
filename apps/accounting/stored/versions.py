"""The versions of a stored answer's inputs as they stand now (docs/performance.md, "Stored month
answers"): what the code is (`CODE_VERSION`), and the log of input writes (`InputChange`, appended
to by Postgres triggers) read in one query per request — per undated category, per month and,
for the per-day parts, per UTC date. `stored/answers.py` stores and proves answers under them; a page's
parts share one read of each (`versions_read_once`).
"""
from __future__ import annotations

import hashlib
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import date, timedelta, timezone
from importlib import metadata
from pathlib import Path

import psycopg
from django.conf import settings
from django.db import connection

from apps.accounting.core.periods import period_bounds


# What shapes a stored answer or body: the product's code and templates, and the libraries that
# compute or render it. Their digest is part of every version, so a deploy that changes any of
# them re-proves every answer; nobody bumps a version by hand (docs/performance.md).
SHAPING_SOURCES = ("apps/**/*.py", "gpuportal/**/*.py", "templates/**/*.html")
SHAPING_LIBRARIES = ("django", "djangorestframework", "orjson", "babel", "plotly", "openpyxl", "numpy")


def code_version(root: Path | None = None) -> str:
    """A digest of the shaping sources under `root` (the checkout) and the installed shaping
    libraries' versions. Migrations are left out: they shape the schema, not an answer."""
    root = root or Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for pattern in SHAPING_SOURCES:
        for path in sorted(root.glob(pattern)):
            if "migrations" in path.parts or "__pycache__" in path.parts:
                continue
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for lib in SHAPING_LIBRARIES:
        try:
            digest.update(f"{lib}={metadata.version(lib)}\0".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{lib}=none\0".encode())
    return f"code-{digest.hexdigest()[:16]}"


CODE_VERSION = code_version()


def stored_answers() -> bool:
    """Whether this database keeps month answers (Postgres, with its triggers)."""
    return connection.vendor == "postgresql"


def month_dates(period: str):
    """The UTC dates a billing month's instants fall on: every date an input of its answer can
    be logged under (an hour by its UTC date, a daily row by its billing day, which lies inside)."""
    start, end = period_bounds(period, _zone())
    return start.astimezone(timezone.utc).date(), (end - timedelta(microseconds=1)).astimezone(timezone.utc).date()


def _zone():
    from apps.accounting.calendar.zone import billing_zone
    return billing_zone()


def day_dates(day: date):
    """The UTC dates a billing day's instants fall on (one, or two in any zone but UTC)."""
    from apps.accounting.calendar.zone import day_start
    zone = _zone()
    start, end = day_start(day, zone), day_start(day + timedelta(days=1), zone)
    return start.astimezone(timezone.utc).date(), (end - timedelta(microseconds=1)).astimezone(timezone.utc).date()


@dataclass(frozen=True)
class Inputs:
    """The inputs' versions now: (count, last id) of the log rows per undated category and per
    month's dates (and, read with `days=True`, per UTC date). The log only grows (compaction adds
    an epoch row), so equal counts mean no row was added — not even by a transaction that took
    its id earlier and committed later."""
    undated: dict
    dated: dict
    dates: dict | None = None
    undated_at: dict | None = None      # the last row's instant per undated category

    def mapping(self) -> tuple:
        """The team mapping's version (`usage.team_mapping.mapping_version`) out of these rows: count,
        last id and last instant of the `mapping` and `epoch` rows together."""
        cats = [c for c in ("mapping", "epoch") if c in self.undated]
        return (sum(self.undated[c][0] for c in cats), max((self.undated[c][1] for c in cats), default=None),
                max((self.undated_at[c] for c in cats), default=None))

    def day(self, day: date) -> str:
        """A billing day's part: the month's undated inputs and the log rows of its UTC dates."""
        lo, hi = day_dates(day)
        rows = [v for d, v in self.dates.items() if lo <= d <= hi]
        return f"{self._base()}|{day.isoformat()}:{sum(c for c, _ in rows)},{max((m for _, m in rows), default=0)}"

    def _base(self) -> str:
        u = self.undated
        return f"{CODE_VERSION}|{settings.BILLING_TIMEZONE}|e{u.get('epoch')}|m{u.get('mapping')}"

    def cells(self, period: str) -> str:
        return f"{self._base()}|{period}:{self.dated[period]}"

    def lines(self, period: str) -> str:
        return f"{self.cells(period)}|r{self.undated.get('rates')}"

    def delta(self, period: str) -> str:
        return f"{self.cells(period)}|f{self.undated.get('frozen')}"


# Inside `versions_read_once` (a page view): each version read, made once and reused.
_read_once: ContextVar[dict | None] = ContextVar("answers_read_once", default=None)


@contextmanager
def versions_read_once():
    """Inside, a version read — the log's counts for a set of months, the closed months, the team
    mapping's — is made once and reused (a page reads a month's version for each of its parts).
    A version read earlier is never newer than the data read after it: what is computed and
    stored under it is at worst stale on arrival and recomputed by the next reader, never served
    stale. A reader that waited for another's lock reads afresh (`fresh=True`) to take its answer.
    For reads only (the report pages' GETs): a request that writes inputs must not use it."""
    token = _read_once.set({})
    try:
        yield
    finally:
        _read_once.reset(token)


def reading_once() -> bool:
    """Whether reads are made once here (within `versions_read_once`)."""
    return _read_once.get() is not None


def read_once(key, read):
    """`read()`, or within `versions_read_once` the value it gave the first time for `key`."""
    memo = _read_once.get()
    if memo is None:
        return read()
    if key not in memo:
        memo[key] = read()
    return memo[key]


def prefetch_versions(periods) -> None:
    """Within `versions_read_once`, read the log's versions of every month in `periods` now, in
    one query: the parts of a page that read them after find them (nothing on SQLite)."""
    if stored_answers() and _read_once.get() is not None:
        read_inputs(periods)


def read_inputs(periods, *, days: bool = False, fresh: bool = False) -> Inputs:
    """One query: the undated categories' counts and each month's dated count; with `days`, also
    each UTC date's of those months (what the per-day parts are versioned by). `fresh`: read now
    even within `versions_read_once`."""
    periods = sorted(set(periods))
    memo = None if fresh else _read_once.get()
    if memo is None:
        return _read_inputs(periods, days)
    # A read of more months (or with the dates) holds this one's versions: the same query's rows.
    for key, inputs in memo.items():
        if key[0] == "inputs" and set(periods) <= set(key[1]) and (key[2] or not days):
            return inputs
    return read_once(("inputs", tuple(periods), days), lambda: _read_inputs(periods, days))


def _read_inputs(periods: list[str], days: bool) -> Inputs:
    ranges = [month_dates(p) for p in periods]
    parts = ["SELECT category, count(*), coalesce(max(id), 0), max(at) FROM accounting_inputchange "
             "WHERE day IS NULL GROUP BY category"]
    params: list = []
    for p, (lo, hi) in zip(periods, ranges):
        parts.append("SELECT %s, count(*), coalesce(max(id), 0), NULL FROM accounting_inputchange "
                     "WHERE day BETWEEN %s AND %s")
        params += [f"month:{p}", lo, hi]
        if days:
            parts.append("SELECT 'date:' || day::text, count(*), max(id), NULL FROM accounting_inputchange "
                         "WHERE day BETWEEN %s AND %s GROUP BY day")
            params += [lo, hi]
    connection.ensure_connection()
    # Server-side binding: read on every request with the same text, so psycopg prepares it on
    # the connection after a few uses and Postgres stops planning it (~1 ms a read).
    with psycopg.Cursor(connection.connection) as cur:
        cur.execute(" UNION ALL ".join(parts), params)
        rows = cur.fetchall()
    undated, dated, dates, undated_at = {}, {}, {}, {}
    for key, count, last, at in rows:
        if key.startswith("month:"):
            dated[key[6:]] = (count, last)
        elif key.startswith("date:"):
            dates[date.fromisoformat(key[5:])] = (count, last)
        else:
            undated[key] = (count, last)
            undated_at[key] = at
    return Inputs(undated=undated, dated=dated, dates=dates if days else None, undated_at=undated_at)


def read_inputs_once() -> Inputs | None:
    """Within `versions_read_once`, versions this request already read (`prefetch_versions`),
    else None: their undated rows answer questions of the whole log (the team mapping's)."""
    memo = _read_once.get()
    if memo is None:
        return None
    return next((inputs for key, inputs in memo.items() if isinstance(key, tuple) and key[0] == "inputs"), None)
