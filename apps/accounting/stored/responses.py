"""A month's API answers and page parts as sent: stored bytes (`MonthBody`) with the version of
the answer they were rendered from, and a gzip copy; at most `MONTH_BODIES_PER_PERIOD` per month,
dropped when not rendered for `MONTH_BODY_KEEP_DAYS` (docs/performance.md, "Stored month
answers"; docs/security.md, "Stored answers"). The answers they render are stored and proven by
`stored/answers.py`; a body only keeps the bytes."""
from __future__ import annotations

import gzip
import hashlib
import zlib
from datetime import timedelta

import psycopg
from django.conf import settings
from django.db import connection, transaction

from apps.accounting.stored.answers import LOCK_CLASS, month_kept
from apps.accounting.stored.refresh import months_of
from apps.accounting.stored.versions import read_inputs, stored_answers
from apps.accounting.models import MonthBody


def scope_tag(teams) -> str:
    """The part of a stored body's key that names whose answer it is: `all` for every team,
    else a digest of the sorted team names (a set of teams, whichever user holds it, sees the
    same answer; the whole digest, so no two sets share a body)."""
    if teams is None:
        return "all"
    return "teams:" + hashlib.sha256("\n".join(sorted(teams)).encode()).hexdigest()


def body(period: str, key: str, version: str, render, *, gzipped: bool = False) -> bytes:
    """A month's API answer as sent, stored with `version`: the stored bytes when current,
    else `render()` (which must read the answer after `version` was read), stored and returned.
    With `gzipped`, the same answer gzip-compressed (stored beside it, compressed once). A month
    outside the fleet's history (`stored.answers.month_kept`) is rendered and stores nothing."""
    stored = read_body(period, key, version, gzipped=gzipped)
    if stored is not None:
        return stored
    rendered = render()
    if not month_kept(period):
        return gzip_of(rendered) if gzipped else rendered
    packed = gzip_of(rendered)
    write_body(period, key, version, rendered, packed)
    return packed if gzipped else rendered


def window_body(start, end, key: str, render, *, also: tuple[str, ...] = ()) -> bytes:
    """An answer over the hours [start, end) (a trailing window, across months), stored at the
    version of what it reads: the usage hours of every month the window touches and the undated
    categories `also` (`OWNERS`, `QUOTA`); filed under the window's last month, so its bounds
    prune it (docs/performance.md, "Right-sizing and quota advice"). `render()` each time where
    the database keeps no answers, or for an empty window. `key` names the question and its window."""
    if not stored_answers() or end <= start:
        return render()
    periods = months_of(start, end)
    inputs = read_inputs(periods)
    version = "|".join(inputs.cells(p) for p in periods) + "".join(f"|{c} {inputs.undated.get(c)}" for c in also)
    return body(periods[-1], key, version, render)


def read_body(period: str, key: str, version: str, *, gzipped: bool = False) -> bytes | None:
    """The bytes stored under (period, key) if stored with `version` (or their gzip copy), else None."""
    column = "gzipped" if gzipped else "body"
    connection.ensure_connection()
    # A server-side-binding cursor reading in binary: megabytes of bytea come back as they are,
    # not as hex text to decode (Django's client-side cursors read text only).
    with psycopg.Cursor(connection.connection) as cur:
        cur.execute(f"SELECT {column} FROM {MonthBody._meta.db_table} WHERE period = %s AND key = %s AND version = %s",
                    [period, key, version], binary=True)
        row = cur.fetchone()
    return bytes(row[0]) if row is not None and row[0] is not None else None


def write_body(period: str, key: str, version: str, rendered: bytes, packed: bytes | None) -> None:
    """Store `rendered` (and its gzip copy, or none) under (period, key) with `version`."""
    table = MonthBody._meta.db_table
    with transaction.atomic():
        with connection.cursor() as cur:
            # clock_timestamp(), not now(): bodies written in one transaction keep their order.
            cur.execute(f"INSERT INTO {table} (period, key, version, body, gzipped, rendered_at) "
                        "VALUES (%s, %s, %s, %s, %s, clock_timestamp()) "
                        "ON CONFLICT (period, key) DO UPDATE SET version = EXCLUDED.version, body = EXCLUDED.body, "
                        "gzipped = EXCLUDED.gzipped, rendered_at = EXCLUDED.rendered_at",
                        [period, key, version, rendered, packed])
        _bound_bodies(period)


BODY_LOCK_CLASS = LOCK_CLASS + 1   # pg_advisory_xact_lock(class, key): pruning a month's bodies


def bodies_per_period() -> int:
    """At most this many stored bodies per month (docs/security.md, "Stored answers")."""
    return int(getattr(settings, "MONTH_BODIES_PER_PERIOD", 2000))


def body_bytes_per_period() -> int:
    """At most this many bytes of stored bodies (plain and gzip copies) per month."""
    return int(getattr(settings, "MONTH_BODY_MB_PER_PERIOD", 256)) * 2**20


def _bound_bodies(period: str) -> None:
    """Keep the month's newest bodies within `bodies_per_period()` and `body_bytes_per_period()`,
    dropping the longest unrendered first (the one just stored is the newest, and is kept even
    alone over the bytes). Whoever holds the month's pruning lock prunes; a concurrent writer
    skips it rather than wait, and the next write prunes again. The sizes are read from the
    values' headers (`octet_length` reads no stored bytes)."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [BODY_LOCK_CLASS, zlib.crc32(period.encode()) - 2**31])
        if not cur.fetchone()[0]:
            return
        table = MonthBody._meta.db_table
        cur.execute(f"DELETE FROM {table} WHERE id IN (SELECT id FROM (SELECT id, "
                    "row_number() OVER newest AS n, "
                    "sum(octet_length(body) + coalesce(octet_length(gzipped), 0)) OVER newest AS bytes "
                    f"FROM {table} WHERE period = %s WINDOW newest AS (ORDER BY rendered_at DESC, id DESC)) AS kept "
                    "WHERE n > %s OR (n > 1 AND bytes > %s))", [period, bodies_per_period(), body_bytes_per_period()])


def prune_bodies(keep_days: int | None = None) -> int:
    """Drop stored bodies not rendered in `keep_days` (default `MONTH_BODY_KEEP_DAYS`, 31): a
    body still asked for is rendered again on its next request. Returns the rows removed."""
    if not stored_answers():
        return 0
    days = keep_days if keep_days is not None else int(getattr(settings, "MONTH_BODY_KEEP_DAYS", 31))
    with connection.cursor() as cur:
        cur.execute(f"DELETE FROM {MonthBody._meta.db_table} WHERE rendered_at < clock_timestamp() - %s",
                    [timedelta(days=days)])
        return cur.rowcount


def gzip_of(data: bytes) -> bytes:
    """gzip at level 6 (zlib's default: 9 MB of statement JSON → about 0.5 MB in ~0.1 s here,
    paid once per version) with no timestamp, so the same answer always gives the same bytes."""
    return gzip.compress(data, compresslevel=6, mtime=0)
