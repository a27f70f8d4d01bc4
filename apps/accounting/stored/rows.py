"""A stored month answer's rows in and out (docs/performance.md, "Stored month answers"): the
columns of stored cells and lines, writing a part's rows (by COPY, `db.bulk.insert_rows`) and
reading them back as `Cell`s and `Line`s — whole, or day parts summed. `stored/answers.py` decides
when a part is current; this is only how its rows are kept.
"""
from __future__ import annotations

from datetime import date

from django.db import connection

from apps.accounting.db.bulk import insert_rows
from apps.accounting.core.lines import Cell, Line
from apps.accounting.core.ratecard import to_decimal
from apps.accounting.models import MonthAnswer, MonthCell, MonthLine


CELL_COLUMNS = ("cluster_id_value", "cluster", "namespace", "team", "gpu_model", "mig_profile", "price_class",
                 "day", "gpu_seconds", "used_gpu_seconds", "idle_gpu_seconds", "mig_seconds")
LINE_COLUMNS = ("kind", "adjusts_period", "team", "cluster", "namespace", "gpu_model", "mig_profile",
                 "price_class", "rate_basis", "hourly_rate", "currency", "allocated_gpu_seconds",
                 "used_gpu_seconds", "billed_seconds")


def store(period: str, part: str, version: str, rows: list, compute_ms: float = 0.0) -> None:
    """Replace the stored part with `rows` (cells or lines, in their order) by COPY."""
    model = MonthLine if part == MonthAnswer.LINES else MonthCell
    table = model._meta.db_table
    columns, values = (LINE_COLUMNS, line_values) if part == MonthAnswer.LINES else (CELL_COLUMNS, cell_values)
    with connection.cursor() as cur:
        cur.execute(f"INSERT INTO {MonthAnswer._meta.db_table} (period, part, version, computed_at, compute_ms) "
                    "VALUES (%s, %s, %s, now(), %s) ON CONFLICT (period, part) DO UPDATE SET "
                    "version = EXCLUDED.version, computed_at = EXCLUDED.computed_at, "
                    "compute_ms = EXCLUDED.compute_ms RETURNING id", [period, part, version, round(compute_ms, 1)])
        answer_id = cur.fetchone()[0]
        cur.execute(f"DELETE FROM {table} WHERE answer_id = %s", [answer_id])
    insert_rows(model, ("answer_id", "position", *columns), ((answer_id, i, *values(row)) for i, row in enumerate(rows)))


def cell_values(c) -> tuple:
    return (c.cluster_id, c.cluster, c.namespace, c.team, c.gpu_model, c.mig_profile, c.price_class, c.day,
            c.gpu_seconds, c.used_gpu_seconds, getattr(c, "idle_gpu_seconds", 0.0), c.mig_seconds)


def line_values(line: Line) -> tuple:
    return (line.kind, line.adjusts_period, line.team, line.cluster, line.namespace, line.gpu_model,
            line.mig_profile, line.price_class, line.rate_basis, line.hourly_rate, line.currency,
            float(line.allocated_gpu_seconds), float(line.used_gpu_seconds), float(line.billed_seconds))


def read_current(period: str, part: str, version: str) -> list | None:
    """The stored rows of a part if it is stored with `version`, else None. One statement, so
    a replacement committing meanwhile is seen whole or not at all."""
    columns = LINE_COLUMNS if part == MonthAnswer.LINES else CELL_COLUMNS
    table = (MonthLine if part == MonthAnswer.LINES else MonthCell)._meta.db_table
    with connection.cursor() as cur:
        # The version is matched in the query: a stale part (what a write leaves) reads one
        # index row, not its thousands of rows to throw away.
        cur.execute(f"SELECT a.version, r.position, {', '.join('r.' + c for c in columns)} "
                    f"FROM {MonthAnswer._meta.db_table} a LEFT JOIN {table} r ON r.answer_id = a.id "
                    "WHERE a.period = %s AND a.part = %s AND a.version = %s ORDER BY r.position",
                    [period, part, version])
        rows = cur.fetchall()
    if not rows:
        return None
    rows = [r[2:] for r in rows if r[1] is not None]
    if part == MonthAnswer.LINES:
        return [Line(kind=k, team=team, cluster=cl, namespace=ns, gpu_model=model, mig_profile=profile,
                     price_class=pc, rate_basis=basis, hourly_rate=rate, currency=cur_, adjusts_period=adj,
                     allocated_gpu_seconds=to_decimal(g), used_gpu_seconds=to_decimal(u),
                     billed_seconds=to_decimal(b))
                for k, adj, team, cl, ns, model, profile, pc, basis, rate, cur_, g, u, b in rows]
    if part == MonthAnswer.DELTA:
        return [Cell(cid, cl, ns, team, model, profile, day, g, u, 0.0, m, pc)
                for cid, cl, ns, team, model, profile, pc, day, g, u, _i, m in rows]
    return [Cell(cid, cl, ns, team, model, profile, day, g, u, i, m, pc)
            for cid, cl, ns, team, model, profile, pc, day, g, u, i, m in rows]


def day_cells(answer_ids: list[int]) -> list[Cell]:
    """The cells of stored day parts, day by day in their stored order (one query)."""
    with connection.cursor() as cur:
        cur.execute(f"SELECT {', '.join(CELL_COLUMNS)} FROM {MonthCell._meta.db_table} WHERE answer_id = ANY(%s) "
                    "ORDER BY day, position", [list(answer_ids)])
        rows = cur.fetchall()
    return [Cell(cid, cl, ns, team, model, profile, day, g, u, i, m, pc)
            for cid, cl, ns, team, model, profile, pc, day, g, u, i, m in rows]


def merged_day_cells(answer_ids: list[int], starts: list[date]) -> list[Cell]:
    """The span cells of stored day parts, summed by the database in one query
    (`stored.spans.merged_in_db`): the month's 230,000 per-day cells at 10,000 GPUs come back as its
    22,800 span cells, the same floats as `stored.spans.merge_spans` (docs/performance.md, "Per-day parts")."""
    from apps.accounting.stored.spans import merged_in_db

    return merged_in_db(f"SELECT * FROM {MonthCell._meta.db_table} WHERE answer_id = ANY(%s)", [list(answer_ids)],
                        starts)
