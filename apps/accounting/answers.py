"""Stored month answers that can never be stale (docs/performance.md, "Stored month answers").

A month's answer is stored in parts, each with the version of the inputs it was computed from:

- `cells`: the month's span cells (`usage_cells(per_day=False)`), what the usage API's month
  rows and the statement lines are built from. Version: the month's usage dates, the undated
  mapping inputs (teams, labels, claims, pools, cluster names, rate dates), the zone, the code.
- `lines`: the month's own statement lines (`build_lines` of those cells): the cells' version
  plus the rate card.
- `delta`: for a closed month, its late data — live per-day cells minus the frozen ones —
  priced on each read with the rate card in force. Version: the closed month's usage dates,
  the mapping inputs and the frozen cells (written only by closes and reopens). Ingest writing an hour into a closed month
  logs that month's date (trigger), so the months after it re-check it; otherwise no read
  looks at frozen cells at all.

The version is read in one query over `InputChange`, which Postgres triggers append to on every
write of an input (migration 0007), so no writer can forget it. A stale or missing part is
recomputed under a transaction-scoped advisory lock; the version is read *before* computing and
stored with the answer, so a write committed meanwhile makes the answer stale again rather than
served stale. SQLite (the offline demo) has no triggers: every read computes live.
"""
from __future__ import annotations

import hashlib
import time
import zlib
from contextlib import contextmanager
from contextvars import ContextVar
from importlib import metadata
from pathlib import Path

import psycopg
from dataclasses import dataclass
from datetime import date, timedelta, timezone

from django.conf import settings
from django.db import connection, transaction

from .bulk import collector_paused, insert_rows
from .calc import period_bounds
from .models import InputChange, MonthAnswer, MonthCell, MonthLine
from .computed import note_computed
from .stored_rows import CELL_COLUMNS, cell_values, read_current, store

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
LOCK_CLASS = 0x6770   # pg_advisory_xact_lock(class, key): the class of month-answer locks


def stored_answers() -> bool:
    """Whether this database keeps month answers (Postgres, with its triggers)."""
    return connection.vendor == "postgresql"


def month_dates(period: str):
    """The UTC dates a billing month's instants fall on: every date an input of its answer can
    be logged under (an hour by its UTC date, a daily row by its billing day, which lies inside)."""
    start, end = period_bounds(period, _zone())
    return start.astimezone(timezone.utc).date(), (end - timedelta(microseconds=1)).astimezone(timezone.utc).date()


def _zone():
    from .timeparse import billing_zone
    return billing_zone()


def day_dates(day: date):
    """The UTC dates a billing day's instants fall on (one, or two in any zone but UTC)."""
    from .days import day_start
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
        """The team mapping's version (`resolvers.mapping_version`) out of these rows: count,
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


def answer(period: str, part: str, version_of, compute, inputs: Inputs | None = None):
    """The stored part when its version is current, else computed, stored and returned.

    `version_of(inputs)` names the version the part needs; `compute(inputs)` computes it
    directly. `inputs`: the versions already read for this request (`read_inputs`), else read
    here. Either way they are read *before* computing and the answer is stored with them: a
    write committed meanwhile makes it stale again, never served stale. A database that keeps
    no answers (SQLite) computes every time (`compute(None)`): callers never ask which it is.
    """
    if not stored_answers():
        return compute(None)
    inputs = inputs or read_inputs([period])
    rows = read_current(period, part, version_of(inputs))
    if rows is not None:
        return rows
    with transaction.atomic():
        with connection.cursor() as cur:
            key = [LOCK_CLASS, _lock_key(period, part)]
            cur.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", key)
            if not cur.fetchone()[0]:
                # Another request is computing it: wait, then take what it stored if still current.
                cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", key)
                inputs = read_inputs([period], fresh=True)
                rows = read_current(period, part, version_of(inputs))
                if rows is not None:
                    return rows
        started = time.perf_counter()
        with collector_paused():
            result = compute(inputs)
            store(period, part, version_of(inputs), result, (time.perf_counter() - started) * 1000.0)
        note_computed(period, part)
    return result


def take_lock(period: str, part: str) -> bool:
    """Take a part's lock until the transaction ends: True if it was free, False if another
    holder had it and this waited for it to finish (then read the part again before computing)."""
    with connection.cursor() as cur:
        key = [LOCK_CLASS, _lock_key(period, part)]
        cur.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", key)
        if cur.fetchone()[0]:
            return True
        cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", key)
    return False


def _part_versions(period: str, prefix: str) -> dict[str, tuple[int, str]]:
    with connection.cursor() as cur:
        cur.execute(f"SELECT part, id, version FROM {MonthAnswer._meta.db_table} WHERE period = %s "
                    "AND part LIKE %s", [period, prefix + "%"])
        return {part: (pk, version) for part, pk, version in cur.fetchall()}


def day_part(day: date) -> str:
    """The part that keeps one billing day's per-day cells: `day05` in its month."""
    return f"day{day.day:02d}"


def day_answers(period: str, days: list[date], compute_days, inputs: Inputs | None = None,
                *, hold: bool = False) -> list[int]:
    """The ids of the month's day parts (`days`, in order), each proven current at its day's
    version (`Inputs.day`); the stale ones computed, by runs of consecutive days, with one call
    of `compute_days(run)` (cells of those days, each with its `day`), and stored.

    Like `answer`: the stale days' locks are taken and the versions read again *before*
    computing, so a write committed meanwhile leaves a part stale, never served stale. `hold`:
    the locks of every day are held until the transaction ends (a close copies the parts)."""
    if inputs is None or inputs.dates is None:
        inputs = read_inputs([period], days=True)
    stored = _part_versions(period, "day")
    stale = [d for d in days if stored.get(day_part(d), (None, None))[1] != inputs.day(d)]
    if stale or hold:
        # No savepoint of its own inside a caller's transaction (`answer`, a close): a failure
        # rolls that back whole anyway.
        with transaction.atomic(savepoint=False), collector_paused():
            _lock_all(period, [day_part(d) for d in (days if hold else stale)])
            if stale:       # someone may have stored them meanwhile: take theirs if current
                inputs = read_inputs([period], days=True, fresh=True)
                stored = _part_versions(period, "day")
                stale = [d for d in days if stored.get(day_part(d), (None, None))[1] != inputs.day(d)]
            computed = []
            for run in _day_runs(stale):
                started = time.perf_counter()
                by_day: dict[date, list] = {d: [] for d in run}
                for cell in compute_days(run):
                    by_day[cell.day].append(cell)
                spent = (time.perf_counter() - started) * 1000.0 / len(run)
                computed += [(day_part(d), inputs.day(d), by_day[d], spent) for d in run]
            if computed:
                for part, pk in _store_cells(period, computed).items():
                    stored[part] = (pk, None)
                for part, *_rest in computed:
                    note_computed(period, part)
    return [stored[day_part(d)][0] for d in days]


def _lock_all(period: str, parts: list[str]) -> None:
    """Take the parts' locks in one statement, always in the same (sorted) order, so two
    computations of overlapping days wait for each other and never deadlock."""
    keys = sorted({_lock_key(period, part) for part in parts})
    with connection.cursor() as cur:
        cur.execute("SELECT count(pg_advisory_xact_lock(%s, k)) FROM unnest(%s::int[]) AS k", [LOCK_CLASS, keys])


def _store_cells(period: str, parts: list[tuple]) -> dict[str, int]:
    """Replace several stored cell parts at once — [(part, version, cells, compute_ms)] — in three
    statements, whatever their number (a cold month is 31 day parts). Returns part → id."""
    table = MonthCell._meta.db_table
    with connection.cursor() as cur:
        values = ", ".join(["(%s, %s, %s, now(), %s)"] * len(parts))
        params = [x for part, version, _rows, ms in parts for x in (period, part, version, round(ms, 1))]
        cur.execute(f"INSERT INTO {MonthAnswer._meta.db_table} (period, part, version, computed_at, compute_ms) "
                    f"VALUES {values} ON CONFLICT (period, part) DO UPDATE SET version = EXCLUDED.version, "
                    "computed_at = EXCLUDED.computed_at, compute_ms = EXCLUDED.compute_ms RETURNING part, id", params)
        ids = dict(cur.fetchall())
        cur.execute(f"DELETE FROM {table} WHERE answer_id = ANY(%s)", [list(ids.values())])
    insert_rows(MonthCell, ("answer_id", "position", *CELL_COLUMNS),
                ((ids[part], i, *cell_values(row)) for part, _version, rows, _ms in parts
                 for i, row in enumerate(rows)))
    return ids


def _day_runs(days: list[date]) -> list[list[date]]:
    runs: list[list[date]] = []
    for d in days:
        if runs and runs[-1][-1] + timedelta(days=1) == d:
            runs[-1].append(d)
        else:
            runs.append([d])
    return runs


def proven(period: str, part: str, version: str) -> int | None:
    """The stored part's id if it is stored with `version`, held so: its lock is taken (until
    the transaction ends), so nobody replaces it while the caller copies it."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_CLASS, _lock_key(period, part)])
        cur.execute(f"SELECT id FROM {MonthAnswer._meta.db_table} WHERE period = %s AND part = %s AND version = %s",
                    [period, part, version])
        row = cur.fetchone()
    return row[0] if row else None


def proven_rows(period: str, part: str, version: str) -> list | None:
    """The stored part's rows if it is stored with `version` (`proven`, then read)."""
    return read_current(period, part, version) if proven(period, part, version) is not None else None


def store_current(period: str, part: str, version_of, rows: list) -> None:
    """Store rows known to be the part's answer in this transaction's snapshot (closing knows a
    closed month has no late data yet), with the version read now, under the part's lock."""
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_CLASS, _lock_key(period, part)])
        store(period, part, version_of(read_inputs([period])), rows)


def _lock_key(period: str, part: str) -> int:
    return zlib.crc32(f"{period}/{part}".encode()) - 2**31     # a signed 32-bit key


def drop_parts(period: str, parts) -> None:
    """Delete stored parts of a month (each under its lock, so no computation is storing it)."""
    with transaction.atomic():
        with connection.cursor() as cur:
            for part in parts:
                cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_CLASS, _lock_key(period, part)])
                table = (MonthLine if part == MonthAnswer.LINES else MonthCell)._meta.db_table
                cur.execute(f"DELETE FROM {table} WHERE answer_id IN (SELECT id FROM {MonthAnswer._meta.db_table} "
                            "WHERE period = %s AND part = %s)", [period, part])
                cur.execute(f"DELETE FROM {MonthAnswer._meta.db_table} WHERE period = %s AND part = %s",
                            [period, part])


def compact_input_changes() -> int:
    """Keep the log small: of each (category, date) only its last row, plus an epoch row that
    changes every version once (the counts shrink, so no stored answer may be trusted across).
    Returns the rows removed."""
    if not stored_answers():
        return 0
    # No table lock (it would queue every ingest behind it): rows of transactions still open are
    # not seen, so not deleted, and count when they commit; the epoch row changes every version.
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("DELETE FROM accounting_inputchange c USING (SELECT category, day, max(id) AS last "
                        "FROM accounting_inputchange WHERE category <> 'epoch' GROUP BY category, day) k "
                        "WHERE c.category = k.category AND c.day IS NOT DISTINCT FROM k.day AND c.id < k.last")
            removed = cur.rowcount
        InputChange.objects.create(category=InputChange.EPOCH, source="compaction")
    return removed
