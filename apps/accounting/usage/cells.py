"""Usage figures per namespace / team / cluster / GPU model, read from the rollups.

One query serves the API, the pages and the CSV (docs/conventions.md, "One home per concept"). The window's whole billing days
that are rolled up are read from UsageDay (a month of 10,000 GPUs is then hundreds of
thousands of rows, not tens of millions); the partial days at its ends, any day not rolled
up, and any day in which a namespace's team label changes come from UsageHour (a "last 7
days" window reads two partial days of hours, not seven).
It aggregates at the grain of
(cluster, namespace, GPU model, MIG profile, price class, billing-zone day) in SQL — hourly
rows also by the label change they follow, so a re-label at 10:00 splits its day there —
the node's price class (node pools) computed in SQL from the pools' globs, then groups in
Python: that grain is what dated team mappings, label history and team-lead scoping need,
and it is small (days × namespaces × models), whatever the number of devices or pods.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import Case, DateTimeField, Q, Sum, Value, When
from django.db.models.functions import TruncDate

from apps.clusters.models import Cluster
from apps.teams.models import UNASSIGNED
from apps.teams.resolve import TeamResolver

from apps.accounting.calendar.zone import day_start
from apps.accounting.core.measures import efficiency
from apps.accounting.core.lines import Cell
from apps.accounting.stored.spans import merge_spans
from apps.accounting.models import UsageDay, UsageDayBuilt, UsageHour
from apps.accounting.usage.team_mapping import team_resolver
from apps.accounting.usage.price_classes import price_class_expr
from apps.accounting.stored.versions import read_once
from apps.accounting.calendar.zone import billing_zone

GROUP_BYS = ("namespace", "team", "cluster", "gpu_model")
FLEET_GROUP_BYS = ("cluster", "gpu_model")


@dataclass(frozen=True)
class UsageFilter:
    start: datetime
    end: datetime
    cluster: str | None = None
    teams: frozenset[str] | None = None        # None: all teams (scoping for team leads)
    namespaces: frozenset[str] | None = None
    gpu_models: frozenset[str] | None = None


def cluster_name_by_id() -> dict[int, str]:
    """{cluster id: name} of every cluster, read once a page (`stored.versions.read_once`)."""
    return read_once("cluster names", lambda: dict(Cluster.objects.values_list("id", "name")))


def usage_cells(f: UsageFilter, *, per_day: bool = True, resolver: TeamResolver | None = None) -> list[Cell]:
    """Cells of the window: whole billing days already rolled up from UsageDay, the rest (the
    partial days at either end, days not rolled up) from UsageHour.

    `per_day=False` merges the days of a span in which nothing dated changes (no namespace
    moves team, no rate takes effect): each cell's `day` is then its span's first day, which
    resolves the team and the rate of the whole span exactly. Totals and prices are those of
    the per-day cells; there are just far fewer cells (a month: a few per namespace, not 31).

    `resolver`: one already read in this request (a page reading several windows), used when it
    knows every cluster read; otherwise one is read here.
    """
    clusters = Cluster.objects.filter(name=f.cluster) if f.cluster else Cluster.objects.all()
    cluster_names = dict(clusters.values_list("id", "name"))
    cluster_ids = set(cluster_names)
    if resolver is None or (resolver.cluster_ids is not None and not cluster_ids <= resolver.cluster_ids):
        resolver = team_resolver(cluster_ids)
    f = _narrowed(f, resolver)
    relabels = {c: ts for c, ts in resolver.label_changes(f.start, f.end).items() if c in cluster_ids}
    rows = []
    for ids, day_ranges, hour_ranges in _read_plan(f, cluster_ids, relabels):
        if day_ranges:
            rows.append(_as_sent(_day_rows(f, ids, day_ranges)))
        if hour_ranges:
            cuts = sorted({t for cid in ids for t in relabels.get(cid, ())})
            rows.append(_as_sent(_hour_rows(f, ids, hour_ranges, cuts)))
    cells = _cells(f, cluster_names, (r for qs in rows for r in qs), resolver)
    return cells if per_day else merge_spans(cells, _span_starts(f, relabels))


# The columns of a cell as `fixed_day_cells`' SELECT gives them.
CELL_SQL_COLUMNS = ("cluster_id", "cluster", "namespace", "team", "gpu_model", "mig_profile", "price_class", "day",
                    "gpu_seconds", "used_gpu_seconds", "idle_gpu_seconds", "mig_seconds")


def fixed_day_cells(f: UsageFilter) -> tuple[tuple[str, list] | None, list[Cell], list[date]]:
    """`usage_cells(f)` per day, in two parts, for writing a whole window's cells at once (a
    close, docs/performance.md "Bulk writes"): a SELECT — (sql, params), its columns
    `CELL_SQL_COLUMNS` — giving in the database the cells of every whole billing day read from
    `UsageDay` of each namespace whose team cannot change in the window
    (`TeamResolver.fixed_team`: nearly every namespace of a month) and of unallocated capacity;
    and the other cells (namespaces that change team, hours read from `UsageHour`), computed as
    `usage_cells` computes them; and the window's span starts (`span_starts`). No cell is in both, and together they are `usage_cells(f)` to
    the bit: the same grouped query gives the same sums, and the team is the one `_cells` would
    give (`tests/accounting/actions/test_periods_cold.py`). Postgres only; a window with no filter but
    `cluster`."""
    assert f.teams is None and f.namespaces is None and f.gpu_models is None, "a whole window, unfiltered"
    clusters = Cluster.objects.filter(name=f.cluster) if f.cluster else Cluster.objects.all()
    cluster_names = dict(clusters.values_list("id", "name"))
    cluster_ids = set(cluster_names)
    resolver = team_resolver(cluster_ids)
    relabels = {c: ts for c, ts in resolver.label_changes(f.start, f.end).items() if c in cluster_ids}
    fixed, moving = resolver.fixed_teams(f.start.astimezone(billing_zone()).date())
    selects, rows = [], []
    for ids, day_ranges, hour_ranges in _read_plan(f, cluster_ids, relabels):
        if day_ranges:
            qs = _day_rows(f, ids, day_ranges)
            selects.append(qs.query.get_compiler(using=qs.db).as_sql())
            mine = {k for k in moving if k[0] in ids}
            if mine:
                qs = _day_rows(replace(f, namespaces=frozenset(ns for _, ns in mine)), ids, day_ranges)
                rows.append([r for r in _as_sent(qs) if (r[0], r[1]) in mine])
        if hour_ranges:
            cuts = sorted({t for cid in ids for t in relabels.get(cid, ())})
            rows.append(_as_sent(_hour_rows(f, ids, hour_ranges, cuts)))
    cells = _cells(f, cluster_names, (r for qs in rows for r in qs), resolver)
    starts = _span_starts(f, relabels)
    if not selects:     # no whole day rolled up: every cell came through Python
        return None, cells, starts
    union = " UNION ALL ".join(f"({sql})" for sql, _ in selects)
    fixed_keys = list(fixed.items())
    sql = (f"SELECT r.cluster_id, cl.name, r.namespace, "
           f"CASE WHEN r.namespace = '' THEN '' ELSE COALESCE(fx.team, %s) END, r.gpu_model, r.mig_profile, "
           f"r.price_class, r.day, COALESCE(r.gpu_s, 0), COALESCE(r.used_s, 0), COALESCE(r.idle_s, 0), "
           f"COALESCE(r.mig_s, 0) FROM ({union}) AS r JOIN {Cluster._meta.db_table} AS cl ON cl.id = r.cluster_id "
           "LEFT JOIN unnest(%s::bigint[], %s::text[], %s::text[]) AS fx(cluster_id, namespace, team) "
           "ON fx.cluster_id = r.cluster_id AND fx.namespace = r.namespace "
           "WHERE r.namespace = '' OR NOT EXISTS (SELECT 1 FROM unnest(%s::bigint[], %s::text[]) "
           "AS mv(cluster_id, namespace) WHERE mv.cluster_id = r.cluster_id AND mv.namespace = r.namespace)")
    params = [UNASSIGNED, *(p for _, ps in selects for p in ps),
              [c for (c, _), _t in fixed_keys], [n for (_, n), _t in fixed_keys], [t for _k, t in fixed_keys],
              [c for c, _ in moving], [n for _, n in moving]]
    return (sql, params), cells, starts


def span_starts(f: UsageFilter, resolver: TeamResolver | None = None) -> list[date]:
    """The first days of the window's spans (`usage_cells(per_day=False)`), for merging per-day
    cells read elsewhere (a month's stored day parts, docs/performance.md). `resolver`: one of
    every cluster already read in this request."""
    if resolver is None or resolver.cluster_ids is not None:
        resolver = team_resolver()
    relabels = resolver.label_changes(f.start, f.end)
    return _span_starts(f, relabels)


NARROW_MAX_NAMESPACES = 2000   # past this, an IN list costs the database more than the rows it saves


def _narrowed(f: UsageFilter, resolver: TeamResolver) -> UsageFilter:
    """A team-scoped read (a lead, a team page) asks SQL only for the namespaces that can
    resolve to those teams; each row is still resolved, so this only skips rows that could
    never match (a team of a 5,000-namespace fleet reads its own dozen, not all of them)."""
    if f.teams is None:
        return f
    names = resolver.namespaces_of(f.teams)
    if names is None or len(names) > NARROW_MAX_NAMESPACES:
        return f
    return replace(f, namespaces=frozenset(names) if f.namespaces is None else f.namespaces & names)


def _runs(days: list[date]) -> list[tuple[date, date]]:
    """Sorted days as [first, after-last) runs of consecutive days."""
    runs: list[list[date]] = []
    for d in days:
        if runs and runs[-1][1] == d:
            runs[-1][1] = d + timedelta(days=1)
        else:
            runs.append([d, d + timedelta(days=1)])
    return [(a, b) for a, b in runs]


def _read_plan(f: UsageFilter, cluster_ids: set[int], relabels: dict[int, list[datetime]] | None = None):
    """[(cluster ids, day ranges for UsageDay, instant ranges for UsageHour)] covering the window.

    The window's whole billing days that are rolled up in the current zone are read from
    UsageDay; the hours before the first local midnight, after the last one, of any day not
    rolled up, and of any day a namespace of the cluster is re-labelled after its first hour
    (`relabels`: TeamResolver.label_changes) come from UsageHour. Clusters with the same
    rolled-up days share their queries.
    """
    zone = billing_zone()
    start, end = f.start.astimezone(zone), f.end.astimezone(zone)
    first = start.date() if start.time() == time.min else start.date() + timedelta(days=1)
    last = end.date()                       # the first day not wholly inside the window
    if not cluster_ids:
        return []
    if first >= last:
        return [(cluster_ids, [], [(f.start, f.end)])]
    built: dict[int, list[date]] = {cid: [] for cid in cluster_ids}
    for cid, day in (UsageDayBuilt.objects.filter(day__gte=first, day__lt=last, zone=zone.key,
                                                  cluster_id__in=cluster_ids)
                     .order_by("day").values_list("cluster_id", "day")):
        built[cid].append(day)
    for cid, instants in (relabels or {}).items():
        split = {t.astimezone(zone).date() for t in instants if t != day_start(t.astimezone(zone).date(), zone)}
        if cid in built and split:
            built[cid] = [d for d in built[cid] if d not in split]
    by_days: dict[tuple, set[int]] = {}
    for cid, days in built.items():
        by_days.setdefault(tuple(days), set()).add(cid)
    all_days = [first + timedelta(days=i) for i in range((last - first).days)]
    plan = []
    for days, ids in by_days.items():
        done = set(days)
        hour_ranges = [(f.start, day_start(first, zone)), (day_start(last, zone), f.end)]
        hour_ranges += [(day_start(a, zone), day_start(b, zone)) for a, b in _runs([d for d in all_days if d not in done])]
        plan.append((ids, _runs(list(days)), [(a, b) for a, b in hour_ranges if a < b]))
    return plan


def _span_starts(f: UsageFilter, relabels: dict[int, list[datetime]] | None = None) -> list[date]:
    """First days of the spans of the window inside which no dated mapping or rate changes,
    and no label changes but maybe on a span's first day (its hours are told apart by the
    change they follow, `_since_of`)."""
    from apps.teams.models import NamespaceAssignment

    from apps.accounting.models import Rate

    zone = billing_zone()
    first = f.start.astimezone(zone).date()
    last = f.end.astimezone(zone).date()
    changes = set(NamespaceAssignment.objects.filter(effective_from__gt=first, effective_from__lte=last)
                  .values_list("effective_from", flat=True))
    changes |= set(Rate.objects.filter(effective_from__gt=first, effective_from__lte=last)
                   .values_list("effective_from", flat=True))
    for t in {t for instants in (relabels or {}).values() for t in instants}:
        day = t.astimezone(zone).date()
        changes.add(day)
        if t != day_start(day, zone):
            changes.add(day + timedelta(days=1))    # the day after a mid-day change is whole again
    return [first] + sorted(d for d in changes if first < d <= last)


def _since_of(field: str, cuts: list[datetime]):
    """SQL: the latest label change at or before the row's hour (NULL before the first)."""
    if not cuts:
        return Value(None, output_field=DateTimeField())
    whens = [When(**{f"{field}__gte": t}, then=Value(t)) for t in reversed(cuts)]
    return Case(*whens, default=Value(None), output_field=DateTimeField())


def _filtered(qs, f: UsageFilter):
    if f.namespaces is not None:
        qs = qs.filter(namespace__in=f.namespaces)
    if f.gpu_models is not None:
        qs = qs.filter(gpu_model__in=f.gpu_models)
    return qs


_SUMS = dict(gpu_s=Sum("gpu_seconds"), used_s=Sum("used_gpu_seconds"), idle_s=Sum("idle_gpu_seconds"),
             mig_s=Sum("mig_seconds"))


def _ranges(field: str, ranges) -> Q:
    q = Q()
    for a, b in ranges:
        q |= Q(**{f"{field}__gte": a, f"{field}__lt": b})
    return q


def _day_rows(f: UsageFilter, cluster_ids: set[int], day_ranges):
    qs = UsageDay.objects.filter(_ranges("day", day_ranges), cluster_id__in=cluster_ids)
    return _grouped(_filtered(qs, f).annotate(price_class=price_class_expr(cluster_ids)))


def _hour_rows(f: UsageFilter, cluster_ids: set[int], hour_ranges, cuts: list[datetime] = ()):
    qs = UsageHour.objects.filter(_ranges("hour_start", hour_ranges), cluster_id__in=cluster_ids)
    qs = _filtered(qs, f).annotate(price_class=price_class_expr(cluster_ids),
                                   day=TruncDate("hour_start", tzinfo=billing_zone()))
    return _grouped(qs, _since_of("hour_start", list(cuts)))


def _grouped(qs, since=None):
    """Sums per cell key and billing day, and per label change the hours follow (`since`; NULL
    for daily rows). Spans of days are merged from these in Python (`merge_spans`)."""
    qs = qs.annotate(since=since if since is not None else Value(None, output_field=DateTimeField()))
    keys = ("cluster_id", "namespace", "gpu_model", "mig_profile", "price_class", "day", "since")
    return qs.values(*keys).annotate(**_SUMS).order_by().values_list(*keys, *_SUMS)


def _as_sent(qs):
    """A values_list query's rows as the driver returns them. On Postgres psycopg already gives
    floats, dates and aware datetimes, and the ORM's per-value converters (a float() on every
    sum) cost a month's close about 0.4 s over 230,000 rows (docs/performance.md); elsewhere
    (SQLite sends dates as text) the ORM converts."""
    db = connections[qs.db]
    if db.vendor != "postgresql":
        return qs
    try:
        sql, params = qs.query.get_compiler(qs.db).as_sql()
    except EmptyResultSet:      # a filter that matches nothing (an empty set of teams): no query
        return []
    with db.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


_UNSEEN = object()


def _cells(f: UsageFilter, cluster_names: dict[int, str], rows, resolver: TeamResolver) -> list[Cell]:
    zone = billing_zone()
    first_day = f.start.astimezone(zone).date()
    starts: dict[date, datetime] = {}
    fixed: dict[tuple[int, str], str | None] = {}   # a namespace's team for the whole window, if it has one
    cells: dict[tuple, Cell] = {}
    for cluster_id, ns, model, profile, price_class, day, since, gpu_s, used_s, idle_s, mig_s in rows:
        team = ""
        if ns:
            team = fixed.get((cluster_id, ns), _UNSEEN)
            if team is _UNSEEN:
                team = fixed[(cluster_id, ns)] = resolver.fixed_team(cluster_id, ns, first_day)
            if team is None:
                start = starts.get(day) or starts.setdefault(day, day_start(day, zone))
                # The label of the row's first hour: its day's (or span's) start, or the change it follows.
                team = resolver.team(cluster_id, ns, day, since if since is not None and since > start else start)
        if f.teams is not None and (not ns or team not in f.teams):
            continue
        key = (cluster_id, ns, model, profile, price_class, day, team)
        cell = cells.get(key)
        if cell is None:   # most keys have one row: the cell is made with its sums
            cells[key] = Cell(cluster_id, cluster_names.get(cluster_id, "?"), ns, team, model, profile, day,
                              gpu_s or 0.0, used_s or 0.0, idle_s or 0.0, mig_s or 0.0, price_class)
        else:
            cell.gpu_seconds += gpu_s or 0.0
            cell.used_gpu_seconds += used_s or 0.0
            cell.idle_gpu_seconds += idle_s or 0.0
            cell.mig_seconds += mig_s or 0.0
    return list(cells.values())


@dataclass
class UsageRow:
    key: str
    allocated_gpu_seconds: float = 0.0
    used_gpu_seconds: float = 0.0
    idle_gpu_seconds: float = 0.0
    unallocated_gpu_seconds: float = 0.0
    mig_seconds: dict[str, float] = field(default_factory=dict)
    cells: list[Cell] = field(default_factory=list)

    @property
    def efficiency(self) -> float | None:
        return efficiency(self.used_gpu_seconds, self.allocated_gpu_seconds)


def group_key(cell: Cell, group_by: str) -> str:
    if group_by == "namespace":
        return cell.namespace
    if group_by == "team":
        return cell.team or UNASSIGNED
    if group_by == "cluster":
        return cell.cluster
    return cell.gpu_model


def group_cells(cells: list[Cell], group_by: str) -> list[UsageRow]:
    if group_by not in GROUP_BYS:
        raise ValueError(f"group_by={group_by!r} is not one of {', '.join(GROUP_BYS)}")
    rows: dict[str, UsageRow] = {}
    fleet = group_by in FLEET_GROUP_BYS
    for c in cells:
        if not c.allocated and not fleet:
            continue
        key = group_key(c, group_by)
        row = rows.get(key)
        if row is None:
            row = rows[key] = UsageRow(key=key)
        row.cells.append(c)
        if c.allocated:
            row.allocated_gpu_seconds += c.gpu_seconds
            row.used_gpu_seconds += c.used_gpu_seconds
            row.idle_gpu_seconds += c.idle_gpu_seconds
            if c.mig_profile:
                row.mig_seconds[c.mig_profile] = row.mig_seconds.get(c.mig_profile, 0.0) + c.mig_seconds
        else:
            row.unallocated_gpu_seconds += c.gpu_seconds
    return sorted(rows.values(), key=lambda r: (-r.allocated_gpu_seconds, r.key))
