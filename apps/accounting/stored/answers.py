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

import time
import zlib
from datetime import date, timedelta

from django.db import connection, transaction

from apps.accounting.db.bulk import collector_paused, insert_rows
from apps.accounting.models import InputChange, MonthAnswer, MonthCell, MonthLine
from apps.accounting.stored.provenance import note_computed
from apps.accounting.stored.versions import Inputs, read_inputs, read_once, stored_answers
from apps.accounting.stored.rows import CELL_COLUMNS, cell_values, read_current, store

LOCK_CLASS = 0x6770   # pg_advisory_xact_lock(class, key): the class of month-answer locks


def month_kept(period: str) -> bool:
    """Whether answers of `period` may be stored: a month of the fleet's history, from the month
    of its first ingested hour through the current month (billing zone). Any other month is
    answered live and stores nothing, so GETs over the years 2000-2100 cannot fill the store
    (docs/security.md, "Stored answers"). Two index look-ups, read once a page (`read_once`) and
    never cached longer: a backfill of an earlier month is kept from its next read on."""
    from django.utils import timezone as dj_timezone

    from apps.accounting.core.periods import period_of
    from apps.accounting.calendar.zone import billing_zone

    zone = billing_zone()
    if period > period_of(dj_timezone.now().astimezone(zone).date()):
        return False
    first = read_once("first hour of the fleet", _first_hour)
    return first is not None and period >= period_of(first.astimezone(zone).date())


def _first_hour():
    from apps.accounting.models.rollups import DeviceHealthHour, UsageHour

    with connection.cursor() as cur:
        cur.execute(f"SELECT LEAST((SELECT min(hour_start) FROM {UsageHour._meta.db_table}), "
                    f"(SELECT min(hour_start) FROM {DeviceHealthHour._meta.db_table}))")
        return cur.fetchone()[0]


def answer(period: str, part: str, version_of, compute, inputs: Inputs | None = None):
    """The stored part when its version is current, else computed, stored and returned.

    `version_of(inputs)` names the version the part needs; `compute(inputs)` computes it
    directly. `inputs`: the versions already read for this request (`read_inputs`), else read
    here. Either way they are read *before* computing and the answer is stored with them: a
    write committed meanwhile makes it stale again, never served stale. A database that keeps
    no answers (SQLite), or a month outside the fleet's history (`month_kept`), computes every
    time (`compute(None)`): callers never ask which it is.
    """
    if not stored_answers():
        return compute(None)
    inputs = inputs or read_inputs([period])
    rows = read_current(period, part, version_of(inputs))
    if rows is not None:
        return rows
    if not month_kept(period):      # asked only when nothing is stored: a stored read stays one query
        return compute(None)
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
    stale = _stale(stored, days, inputs)
    if stale or hold:
        # No savepoint of its own inside a caller's transaction (`answer`, a close): a failure
        # rolls that back whole anyway.
        with transaction.atomic(savepoint=False), collector_paused():
            _lock_all(period, [day_part(d) for d in (days if hold else stale)])
            if stale:       # someone may have stored them meanwhile: take theirs if current
                inputs = read_inputs([period], days=True, fresh=True)
                stored = _part_versions(period, "day")
                stale = _stale(stored, days, inputs)
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


def stale_days(period: str, days: list[date], inputs: Inputs) -> list[date]:
    """The days of `days` whose stored part is missing or not at its day's version (`inputs`
    read with `days=True`): what `day_answers` would compute now."""
    return _stale(_part_versions(period, "day"), days, inputs)


def _stale(stored: dict[str, tuple[int, str]], days: list[date], inputs: Inputs) -> list[date]:
    return [d for d in days if stored.get(day_part(d), (None, None))[1] != inputs.day(d)]


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
