"""Span cells: per-day cells merged over the days in which nothing dated changes, with exact
sums, whichever way the days were read — in Python (`merge_spans`) or by the database from
rows (`merged_in_db`: a month's stored day parts, a cold close's cells). One
definition of a span cell's seconds (docs/performance.md, "Per-day parts")."""
from __future__ import annotations

from bisect import bisect_right
from datetime import date
from decimal import Context, Decimal

from django.db import connection

from apps.accounting.db.bulk import planner_settings
from apps.accounting.core.lines import Cell


def merge_spans(cells, starts: list[date]) -> list[Cell]:
    """Per-day cells merged over the spans starting on `starts`: one cell per key and span, its
    `day` the span's first day, its seconds `exact_sum` of the days' — the same whichever way the
    days were read (one query for the month here, or the month's stored day parts summed by the
    database, `stored.rows.merged_day_cells`), so a span cell is written once. Sorted by `span_key`."""
    acc: dict[tuple, list] = {}
    for c in cells:
        span = starts[max(bisect_right(starts, c.day) - 1, 0)]
        key = (c.cluster_id, c.namespace, c.gpu_model, c.mig_profile, c.price_class, span, c.team)
        sums = acc.get(key)
        if sums is None:
            sums = acc[key] = [c, [], [], [], []]
        sums[1].append(c.gpu_seconds)
        sums[2].append(c.used_gpu_seconds)
        sums[3].append(c.idle_gpu_seconds)
        sums[4].append(c.mig_seconds)
    merged = [Cell(cluster_id=c.cluster_id, cluster=c.cluster, namespace=c.namespace, team=c.team,
                   gpu_model=c.gpu_model, mig_profile=c.mig_profile, day=key[5], gpu_seconds=exact_sum(g),
                   used_gpu_seconds=exact_sum(u), idle_gpu_seconds=exact_sum(i), mig_seconds=exact_sum(m),
                   price_class=c.price_class)
              for key, (c, g, u, i, m) in acc.items()]
    return sorted(merged, key=span_key)


_EXACT = Context(prec=400)   # enough digits that a sum of seconds is never rounded before the end


def exact_sum(values) -> float:
    """The sum of floats as the database sums them exactly: each read as its shortest decimal
    (what Postgres writes for a float8, `x::text::numeric`), added as exact decimals, then
    rounded once to the nearest float. Order never matters, so Python and SQL agree to the bit."""
    if len(values) == 1:
        return float(values[0]) + 0.0
    total = Decimal(0)
    for v in values:
        total = _EXACT.add(total, Decimal(repr(v)))
    return float(total) + 0.0     # no -0.0: the database's numeric has none


def span_key(c: Cell) -> tuple:
    """The order span cells are kept in, wherever they were merged."""
    return (c.cluster_id, c.namespace, c.gpu_model, c.mig_profile, c.price_class, c.day, c.team)


def merged_in_db(source: str, source_params: list, starts: list[date], *, idle: bool = True) -> list[Cell]:
    """Per-day cells — the rows of `source`, a SELECT with the stored-cell columns
    (`cluster_id_value`, `cluster`, `namespace`, `team`, `gpu_model`, `mig_profile`,
    `price_class`, `day`, the seconds) — merged over the spans starting on `starts`, summed by
    the database: per key and span (the span starting on the last of `starts` at or before the
    cell's day), each second column summed as exact decimals of the floats' shortest text
    (`exact_sum`, which `merge_spans` uses), so they are the same floats as `merge_spans` of
    those cells. `idle=False`: the cells keep no idle seconds (frozen cells), read as 0."""
    whens = " ".join("WHEN day >= %s THEN %s::date" for _ in starts[1:][::-1])
    span = f"CASE {whens} ELSE %s::date END" if whens else "%s::date"
    params: list = [x for s in starts[1:][::-1] for x in (s, s)] + [starts[0]]
    # A whole number of seconds is exact as int8, summed as int8 (exactly, in 128 bits), which is
    # far cheaper than parsing its text and adding numerics; the others are read from their text.
    sums = ", ".join(f"COALESCE(sum({c}::int8) FILTER (WHERE {whole}), 0) "
                     f"+ COALESCE(sum({c}::text::numeric) FILTER (WHERE NOT ({whole})), 0)"
                     if c else "0"
                     for c in ("gpu_seconds", "used_gpu_seconds", "idle_gpu_seconds" if idle else "", "mig_seconds")
                     for whole in [f"{c} = trunc({c}) AND abs({c}) < 1e15"])
    # The text of a float8 is its shortest round-trip decimal while extra_float_digits > 0
    # (Postgres' default is 1), set so a session's setting never changes a sum; and the month's
    # 22,800 groups hashed in memory, never 230,000 rows sorted by their text (the rows may have
    # been written moments ago, before any statistics of them).
    with planner_settings(extra_float_digits="1", work_mem="128MB", enable_sort="off"), connection.cursor() as cur:
        # Grouped by the cluster's id (its name follows it): hashing ids, not collating names.
        cur.execute(f"SELECT cluster_id_value, min(cluster), namespace, team, gpu_model, mig_profile, price_class, "
                    f"{span} AS span, {sums} FROM ({source}) AS c "
                    "GROUP BY 1, 3, 4, 5, 6, 7, 8", params + list(source_params))
        rows = cur.fetchall()
    cells = [Cell(cid, cl, ns, team, model, profile, day, float(g) + 0.0, float(u) + 0.0, float(i) + 0.0,
                  float(m) + 0.0, pc)
             for cid, cl, ns, team, model, profile, pc, day, g, u, i, m in rows]
    return sorted(cells, key=span_key)
