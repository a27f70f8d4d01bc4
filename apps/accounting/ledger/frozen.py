"""Frozen cells: the usage a closed month's statement carries, the baseline its late data is
measured against (docs/accounting.md, "Late data for a closed month").

A close writes them (its month's cells, and the late data of the closed months before it that it
books); late data, the ledger, the FOCUS export and the views of a closed month read them back
as usage cells (a page view reads a month's once: `month_cells`), with the allocated, used, idle
and MIG seconds the close read. They are stored by the day, as columns (`models.FrozenDay`): one
row holds a day's cells, position i of each list being one cell. Only this module knows that
shape (docs/performance.md, "Frozen cells stored by the day").
"""
from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import timedelta

import psycopg
from django.db import connection
from django.db.models import Q

from apps.accounting.db.bulk import insert_rows
from apps.accounting.core.lines import Cell
from apps.accounting.core.periods import period_of
from apps.accounting.models import FrozenDay
from apps.accounting.stored.versions import read_once, reading_once

# The lists of a frozen day, and the column of a cell SELECT each one gathers (`freeze_select`).
COLUMNS = ("cluster_ids", "clusters", "namespaces", "teams", "gpu_models", "mig_profiles", "price_classes",
           "gpu_seconds", "used_gpu_seconds", "idle_gpu_seconds", "mig_seconds")
CELL_COLUMNS = ("cluster_id_value", "cluster", "namespace", "team", "gpu_model", "mig_profile", "price_class",
                "gpu_seconds", "used_gpu_seconds", "idle_gpu_seconds", "mig_seconds")


def _values(c: Cell) -> tuple:
    return (c.cluster_id, c.cluster, c.namespace, c.team, c.gpu_model, c.mig_profile, c.price_class,
            float(c.gpu_seconds), float(c.used_gpu_seconds), float(c.idle_gpu_seconds), float(c.mig_seconds))


def write_cells(cells: Iterable[tuple[int, int, Cell]]) -> int:
    """Freeze cells computed in Python: (id of the month they belong to, id of the statement
    booking them, cell). Returns how many cells."""
    days: dict[tuple, list[tuple]] = defaultdict(list)
    for period_id, booked_in_id, cell in cells:
        days[(period_id, booked_in_id, cell.day)].append(_values(cell))
    insert_rows(FrozenDay, ("period_id", "booked_in_id", "day", *COLUMNS),
                ((*key, *(list(column) for column in zip(*values))) for key, values in days.items()))
    return sum(map(len, days.values()))


def freeze_select(select: str, params: list, period_id: int) -> None:
    """Freeze, as the month `period_id`'s own (booked at its close), the cells a SELECT gives —
    columns `CELL_COLUMNS` and `day` — in one INSERT … SELECT: nothing goes through Python.
    Postgres only. Gathered per day by hashing (31 groups, no sort of the cells)."""
    lists = ", ".join(f"array_agg(c.{column})" for column in CELL_COLUMNS)
    with connection.cursor() as cur:
        cur.execute(f"INSERT INTO {FrozenDay._meta.db_table} (period_id, booked_in_id, day, {', '.join(COLUMNS)}) "
                    f"SELECT %s, %s, c.day, {lists} FROM ({select}) AS c GROUP BY c.day",
                    [period_id, period_id, *params])


_CURSORS = itertools.count()

# Days held in memory at a time while reading: a month of a large fleet is never all there twice.
CHUNK_DAYS = 8


def frozen_cells(where: Q) -> Iterator[tuple[str, str, Cell]]:
    """(the month the usage belongs to, the month whose statement booked it, cell) for every
    frozen cell of the days `where` (a `FrozenDay` filter) selects, a few days at a time."""
    for period, booked_in, cells in _days(where):
        for cell in cells:
            yield period, booked_in, cell


def _days(where: Q) -> Iterator[tuple[str, str, list[Cell]]]:
    rows = (FrozenDay.objects.filter(where).order_by("id")
            .values_list("period__period", "booked_in__period", "day", *COLUMNS))
    for period, booked_in, day, *columns in _read(rows):
        if columns[9] is None:      # not yet back-filled (migration 0018): no idle
            columns[9] = [0.0] * len(columns[7])
        yield period, booked_in, [Cell(cid, cluster, namespace, team, model, profile, day, g, u, i, m, price_class)
                                  for cid, cluster, namespace, team, model, profile, price_class, g, u, i, m
                                  in zip(*columns, strict=True)]


def _read(rows) -> Iterator[tuple]:
    """The rows of a `values_list` query, CHUNK_DAYS at a time, in one query. On Postgres in
    binary through a server-side cursor: parsing a month's lists from their text took twice as
    long as the binary form (floats to the bit either way). Django's own cursors bind parameters
    client-side, which allows no binary results; this one is wrapped as Django wraps its own, so
    it is logged and counted like any other query."""
    if connection.vendor != "postgresql":
        yield from rows.iterator(chunk_size=CHUNK_DAYS)
        return
    sql, params = rows.query.sql_with_params()
    connection.ensure_connection()
    # Named afresh each time: a read begun inside another's loop declares a cursor of its own.
    raw = psycopg.ServerCursor(connection.connection, f"frozen_days_{next(_CURSORS)}", withhold=True)
    raw.format = psycopg.pq.Format.BINARY
    with (connection.make_debug_cursor if connection.queries_logged else connection.make_cursor)(raw) as cur:
        cur.execute(sql, params)
        while chunk := cur.fetchmany(CHUNK_DAYS):
            yield from chunk


# The frozen days a closed month's views read, each a (month, statement) pair: the query that
# finds them, and the same test on a day read already.
SCOPES = {
    "own": (lambda bp: Q(period=bp, booked_in=bp), lambda bp, p, b: p == bp.period and b == bp.period),
    "booked": (lambda bp: Q(booked_in=bp), lambda bp, p, b: b == bp.period),
    "late": (lambda bp: Q(period=bp) & ~Q(booked_in=bp), lambda bp, p, b: p == bp.period and b != bp.period),
    "carried": (lambda bp: Q(period=bp), lambda bp, p, b: p == bp.period),
}


def month_cells(bp, scope: str, first=None, last=None) -> Iterator[tuple[str, str, Cell]]:
    """(month, statement, cell) of the frozen days of the closed month `bp` in `scope` — "own":
    its own usage as its close froze it; "booked": every day its statement carries (its own and
    the late data of earlier months its close booked); "late": its late data later closes
    booked; "carried": what statements carry of it (its own and its late data) — of the days
    `first`..`last` if given. Within a page view (`stored.versions.versions_read_once`) every frozen
    day of `bp` (of those days, for part of the month) is read in one query, once, and each scope
    is taken from them: the overview of a closed month reads the month as billed, its days'
    money and its late hours from one read (docs/performance.md, "Closed months read as
    billed"). Elsewhere, the scope's days alone, a few at a time. The cells are shared between
    the readers of a page: never changed."""
    where, keep = SCOPES[scope]
    days_q = Q(day__gte=first, day__lte=last) if first is not None else Q()
    if not reading_once():
        yield from frozen_cells(where(bp) & days_q)
        return
    whole = first is None or (first.day == 1 and period_of(first) == bp.period
                              and period_of(last + timedelta(days=1)) != bp.period)
    span = None if whole else (first, last)
    days = read_once(("frozen days", bp.pk, bp.closed_at, span),
                     lambda: list(_days((Q(period=bp) | Q(booked_in=bp)) & (Q() if whole else days_q))))
    for period, booked_in, cells in days:
        if keep(bp, period, booked_in) and (first is None or (cells and first <= cells[0].day <= last)):
            for cell in cells:
                yield period, booked_in, cell


def carried_cells(bp) -> list[Cell]:
    """The cells a closed month's statements carry (its own and its adjustments)."""
    return [cell for _period, _booked, cell in month_cells(bp, "carried")]


def booked_elsewhere(bp) -> list[str]:
    """The later closed months whose statements booked late data of `bp` (sorted)."""
    return sorted(set(FrozenDay.objects.filter(period=bp).exclude(booked_in=bp)
                      .values_list("booked_in__period", flat=True)))


def unfreeze(bp) -> None:
    """Drop what `bp`'s close froze (its own cells and the late data it booked)."""
    FrozenDay.objects.filter(booked_in=bp).delete()
