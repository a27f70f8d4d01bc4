"""Writing many rows at once: the one bulk writer of the product — ingest's hourly rollups, the
stored month answers and a close's lines and frozen cells all go through `insert_rows`, and
ingest's pods' owners through `upsert_rows`.

On Postgres it is a binary COPY: each value goes in Postgres's own binary form, typed from the
table's columns (read once per table and process), which skips both the ORM's per-field SQL
and the text formatting and parsing of a plain COPY — 230,000 frozen cells of a 10,000-GPU
month take a quarter of the time they took as text (docs/performance.md, "Bulk writes").
Elsewhere (the SQLite demo) it is `bulk_create`.

Beside it, what such writes need of a transaction: the collector paused, planner settings, and
one snapshot read on two connections at once (`one_snapshot`, `beside_in_snapshot`: a close
writes a month's frozen cells on one while the other prices them).
"""
from __future__ import annotations

import contextlib
import contextvars
import gc
import re
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice

from django.db import connection, transaction

BULK = 2000


def insert_rows(model, fields: Sequence[str], rows: Iterable[tuple]) -> int:
    """Insert `rows` (tuples in `fields` order; a foreign key as its `<name>_id` value) into
    `model`'s table; returns how many. `rows` may be a generator: it is read once, as written.
    A value's Python type must suit its column (a float for a float column, a Decimal for a
    numeric one, a dict or list for JSON): binary COPY does not convert text."""
    model_fields = [model._meta.get_field(f) for f in fields]   # a name or an attname (`team_id`)
    if connection.vendor != "postgresql":
        return _bulk_create(model, [f.attname for f in model_fields], rows)
    table = model._meta.db_table
    columns = [f.column for f in model_fields]
    types = _column_types(table)
    json_at = [i for i, f in enumerate(model_fields) if f.get_internal_type() == "JSONField"]
    if json_at:
        rows = _wrap_json(rows, json_at)
    quote = connection.ops.quote_name
    written = 0
    with connection.cursor() as cur:
        with cur.cursor.copy(f"COPY {quote(table)} ({', '.join(quote(c) for c in columns)}) "
                             "FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([types[c] for c in columns])
            for row in rows:
                copy.write_row(row)
                written += 1
    return written


def upsert_rows(model, fields: Sequence[str], rows: Sequence[tuple], unique: Sequence[str]) -> int:
    """Insert `rows` (as `insert_rows` takes them) into `model`'s table, a row whose `unique`
    fields match a stored one replacing that row's other fields; returns how many. On Postgres
    one `INSERT … SELECT FROM unnest(…) ON CONFLICT DO UPDATE`, each column sent as one array in
    binary, where `bulk_create(update_conflicts=True)` builds a model instance and a parameter
    per value (the end of an ingest run writing 6,793 pods' owners: 0.36 s → 0.15 s,
    docs/performance.md). Rows must not repeat a `unique` key."""
    model_fields = [model._meta.get_field(f) for f in fields]
    if connection.vendor != "postgresql":
        unique_names = [model._meta.get_field(f).name for f in unique]
        return _bulk_create(model, [f.attname for f in model_fields], rows, update_conflicts=True,
                            unique_fields=unique_names,
                            update_fields=[f.name for f in model_fields if f.name not in unique_names])
    if not rows:
        return 0
    table = model._meta.db_table
    columns = [f.column for f in model_fields]
    keys = [model._meta.get_field(f).column for f in unique]
    types = _column_types(table)
    quote = connection.ops.quote_name
    arrays = ", ".join(f"%s::{types[c]}[]" for c in columns)
    sets = ", ".join(f"{quote(c)} = EXCLUDED.{quote(c)}" for c in columns if c not in keys)
    with connection.cursor() as cur:
        cur.execute(f"INSERT INTO {quote(table)} ({', '.join(quote(c) for c in columns)}) "
                    f"SELECT * FROM unnest({arrays}) "
                    f"ON CONFLICT ({', '.join(quote(c) for c in keys)}) DO UPDATE SET {sets}",
                    [list(column) for column in zip(*rows)])
    return len(rows)


def _bulk_create(model, attnames: list[str], rows: Iterable[tuple], **options) -> int:
    """`rows` through the ORM, BULK at a time (SQLite, the demo); `options` as `bulk_create` takes them."""
    written = 0
    rows = iter(rows)
    while batch := list(islice(rows, BULK)):
        model.objects.bulk_create([model(**dict(zip(attnames, r))) for r in batch], batch_size=BULK, **options)
        written += len(batch)
    return written


_TYPES: dict[tuple[str, str], dict[str, str]] = {}


def _column_types(table: str) -> dict[str, str]:
    """Column → its Postgres type name (`bigint`, `double precision`, `numeric`…), read once per
    table and database (a migration that changes a column's type restarts the processes)."""
    key = (connection.settings_dict["NAME"], table)
    types = _TYPES.get(key)
    if types is None:
        with connection.cursor() as cur:
            cur.execute("SELECT attname, format_type(atttypid, NULL) FROM pg_attribute "
                        "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped", [table])
            types = _TYPES[key] = dict(cur.fetchall())
    return types


def _wrap_json(rows: Iterable[tuple], at: list[int]):
    from psycopg.types.json import Jsonb

    for r in rows:
        yield tuple(Jsonb(v) if i in at else v for i, v in enumerate(r))


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off while hundreds of thousands of rows are read, summed
    and written (an ingest chunk, a month's cells in a close or a recompute).

    Such work makes millions of small objects that live until it ends; with the collector on,
    each burst of allocations triggers passes that re-scan everything still alive, which cost
    more than the work itself: a tenth to a fifth of a cold close at 10,000 GPUs, more than the
    roll-up in an ingest (docs/performance.md, "Ingest: what was measured, what was chosen" and
    "Bulk writes"). Reference counting frees the rows; such work makes almost no reference
    cycles (12 objects in a day of ingest at 200 GPUs), which the collector frees once it runs
    again afterwards. Nested uses leave it as the outermost found it.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def planner_settings(**settings: str):
    """Postgres settings (`work_mem`, `enable_sort`…) for the statements inside, in a transaction
    (the caller's, else one of its own), put back as they were after them.

    For a statement over a month's rows written moments ago in the same transaction: the planner
    has no statistics of them yet and plans for a handful (sorting 230,000 cells by their text
    to group them, 0.9 s, where hashing them takes 0.15 s), docs/performance.md "Bulk writes".
    Nothing to do on other databases."""
    if connection.vendor != "postgresql":
        yield
        return
    names = list(settings)
    with transaction.atomic(savepoint=False), connection.cursor() as cur:
        cur.execute("SELECT " + ", ".join(["current_setting(%s)"] * len(names)), names)
        before = cur.fetchone()
        cur.execute("SELECT " + ", ".join(["set_config(%s, %s, true)"] * len(names)),
                    [x for name in names for x in (name, settings[name])])
        yield
        # Not in a `finally`: after an error the transaction is rolled back, and its settings with it.
        cur.execute("SELECT " + ", ".join(["set_config(%s, %s, true)"] * len(names)),
                    [x for name, value in zip(names, before) for x in (name, value)])


# ---------------------------------------------------------------- one snapshot, two connections

_shareable = contextvars.ContextVar("shareable_snapshot", default=False)
_SNAPSHOT_ID = re.compile(r"[0-9A-F]+-[0-9A-F]+(-[0-9]+)?")


@contextlib.contextmanager
def one_snapshot():
    """Inside an outermost `transaction.atomic()`, before its first query: every read of the
    block sees the database as at its first query (Postgres REPEATABLE READ), whatever others
    commit meanwhile, and `beside_in_snapshot` may read that same snapshot on a second
    connection. SQLite (the demo) runs transactions one at a time anyway: nothing to do."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cur:
        cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    token = _shareable.set(True)
    try:
        yield
    finally:
        _shareable.reset(token)


@contextlib.contextmanager
def beside_in_snapshot(reads):
    """Run `reads()` (a function that only reads) on a second connection, in a thread, in this
    transaction's snapshot (`pg_export_snapshot`), while the block runs on this connection: the
    two use two cores. Yields a future; its `result()` is what `reads` returned (or raises what
    it raised), waited for when the block ends.

    Outside `one_snapshot` (a caller's transaction, whose rows a second connection could not
    see) and on SQLite, `reads` runs here after the block: the same reads, one after the other.
    `reads` must not depend on what the block writes."""
    if not _shareable.get():
        future: Future = Future()
        yield future
        try:
            future.set_result(reads())
        except BaseException as exc:  # noqa: BLE001 — handed to whoever asks for the result
            future.set_exception(exc)
        return
    with connection.cursor() as cur:
        cur.execute("SELECT pg_export_snapshot()")
        snapshot = cur.fetchone()[0]
    if not _SNAPSHOT_ID.fullmatch(snapshot):     # SET TRANSACTION SNAPSHOT takes no parameter
        raise ValueError(f"unexpected snapshot id {snapshot!r}")

    def in_snapshot():
        try:
            with transaction.atomic(), connection.cursor() as cur:
                cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                cur.execute(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
                return reads()
        finally:
            connection.close()      # this thread's own connection

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="snapshot") as pool:
        yield pool.submit(in_snapshot)
