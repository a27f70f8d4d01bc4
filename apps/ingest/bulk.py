"""Insert many rollup rows fast: COPY on Postgres (psycopg 3), bulk_create elsewhere (SQLite demo).

COPY skips the ORM's per-field SQL compilation, which is most of the time of a bulk_create of
tens of thousands of narrow rows (docs/performance.md).
"""
from __future__ import annotations

from django.db import connection

BULK = 2000


def insert_rows(model, fields: tuple[str, ...], rows: list[tuple]) -> int:
    """Insert `rows` (tuples in `fields` order; FKs as `<name>_id` values) into `model`'s table."""
    if not rows:
        return 0
    if connection.vendor == "postgresql":
        columns = ", ".join(connection.ops.quote_name(model._meta.get_field(_field_name(f)).column) for f in fields)
        json_at = [i for i, f in enumerate(fields) if model._meta.get_field(_field_name(f)).get_internal_type() == "JSONField"]
        if json_at:
            from psycopg.types.json import Jsonb

            rows = [tuple(Jsonb(v) if i in json_at else v for i, v in enumerate(r)) for r in rows]
        with connection.cursor() as cur:
            with cur.cursor.copy(f"COPY {connection.ops.quote_name(model._meta.db_table)} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        return len(rows)
    model.objects.bulk_create([model(**dict(zip(fields, r))) for r in rows], batch_size=BULK)
    return len(rows)


def _field_name(name: str) -> str:
    return name[:-3] if name.endswith("_id") else name
