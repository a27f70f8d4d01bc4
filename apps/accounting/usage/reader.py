"""The one reader of the hourly rollups for the pages, the API, the alerts and the advice
(docs/architecture.md; the rule is docs/teams-and-relabels.md, "Which team owns an hour").

Nothing outside accounting reads `UsageHour`, `QuotaHour`, `QueuedDemandHour` or
`DeviceHealthHour` (an import-linter contract in pyproject.toml says so; ingest writes them).
Every read here takes the window and scope as one `UsageFilter` and answers at one grain: per
pod, per hour, per day, per namespace. Rows that carry a namespace also carry its team, by one
rule: **an hour belongs to the team that owned its namespace at that hour** (the admin mapping
in force on the hour's billing day, else the label in force at the hour; `TeamResolver`).

A read grouped coarser than the hour (a pod's window, a day) is split in SQL at every instant
inside the window at which some namespace changes team (`TeamResolver.team_changes`): each
part is one team's, resolved at its first hour. A pod that ran across a re-org is then two
rows, its hours before the move with the old team and its hours after with the new one; with
no change in the window the query is the plain aggregate it always was.
"""
from __future__ import annotations

from bisect import bisect_right
from datetime import date, datetime, timedelta, timezone as dt_timezone

from django.db.models import (Avg, BigIntegerField, Case, DateTimeField, Exists, Func, Max, Min, OuterRef, Q, Subquery,
                              Sum, Value, When)
from django.db.models.functions import TruncDate

from apps.clusters.models import Cluster
from apps.teams.resolve import TeamResolver

from apps.accounting.core.measures import IdleBlock, idle_block
from apps.accounting.models.daily import UsagePodDay, UsagePodDayBuilt
from apps.accounting.models.rollups import DeviceHealthHour, QueuedDemandHour, QuotaHour, UsageHour
from apps.accounting.usage.price_classes import price_class_expr
from apps.accounting.usage.team_mapping import team_resolver
from apps.accounting.calendar.zone import billing_zone, day_of, day_start
from apps.accounting.usage.cells import NARROW_MAX_NAMESPACES, UsageFilter


class HourTeams:
    """The one team-per-hour rule, over one read of the team mappings and label histories."""

    def __init__(self, resolver: TeamResolver | None = None):
        self.resolver = resolver or team_resolver()
        self.zone = billing_zone()

    def team(self, cluster_id: int, namespace: str, hour: datetime) -> str:
        """The team that owned `namespace` at `hour`; '' for capacity no pod held."""
        if not namespace:
            return ""
        return self.resolver.team(cluster_id, namespace, hour.astimezone(self.zone).date(), hour)

    def since(self, start: datetime, end: datetime, field: str = "hour_start"):
        """SQL: the latest team change at or before the row's hour (NULL before the first)."""
        cuts = self.resolver.team_changes(start, end)
        if not cuts:
            return Value(None, output_field=DateTimeField())
        return Case(*[When(**{f"{field}__gte": t}, then=Value(t)) for t in reversed(cuts)],
                    default=Value(None), output_field=DateTimeField())


def _window(model, f: UsageFilter, rule: HourTeams | None = None):
    qs = model.objects.filter(hour_start__gte=f.start, hour_start__lt=f.end)
    if f.cluster:
        qs = qs.filter(cluster__name=f.cluster)
    namespaces = f.namespaces
    if f.teams is not None and rule is not None:
        # Narrow SQL to the namespaces that can resolve to those teams; rows are still resolved.
        names = rule.resolver.namespaces_of(f.teams)
        if names is not None and len(names) <= NARROW_MAX_NAMESPACES:
            namespaces = frozenset(names) if namespaces is None else namespaces & names
    if namespaces is not None:
        qs = qs.filter(namespace__in=namespaces)
    if f.gpu_models is not None and model is UsageHour:
        qs = qs.filter(gpu_model__in=f.gpu_models)
    return qs


def _merge(into: dict, row: dict, aggregates: dict) -> None:
    for name, agg in aggregates.items():
        a, b = into[name], row[name]
        if a is None or b is None:
            into[name] = b if a is None else a
        elif isinstance(agg, Min):
            into[name] = min(a, b)
        elif isinstance(agg, Max):
            into[name] = max(a, b)
        else:
            into[name] = a + b


def attributed(qs, keys: tuple[str, ...], aggregates: dict, f: UsageFilter, rule: HourTeams) -> list[dict]:
    """`qs` grouped by `keys` with `aggregates` (Sum, Min, Max), each group split at the team
    changes of the window, as dicts with a `team` (the team of the group's hours); rows of
    teams outside `f.teams` are left out. Rows of one group and team are merged."""
    hourly = "hour_start" in keys
    if not hourly:
        qs = qs.annotate(_since=rule.since(f.start, f.end))
    group = keys if hourly else (*keys, "_since")
    rows = qs.values(*group).annotate(_first=Min("hour_start"), **aggregates).order_by()
    out: dict[tuple, dict] = {}
    for r in rows:
        team = rule.team(r["cluster_id"], r["namespace"], r["_first"])
        if f.teams is not None and (not r["namespace"] or team not in f.teams):
            continue
        key = (*(r[k] for k in keys), team)
        found = out.get(key)
        if found is None:
            out[key] = {**{k: r[k] for k in keys}, "team": team, "first": r["_first"],
                        **{a: r[a] for a in aggregates}}
        else:
            found["first"] = min(found["first"], r["_first"])
            _merge(found, r, aggregates)
    return list(out.values())


# ---- pod grain: the idle list --------------------------------------------------------------
# Whole days are read from the per-pod day summary (UsagePodDay, written with the daily table by
# `usage/daily.py`) and only the rest of the window from the hours: the edges, days not built in
# the current zone, and days inside which some namespace changes team (docs/performance.md,
# "The longest reads"). `summary=False` reads every hour (the tests' oracle).

_POD_SUMS = dict(gpu_s=Sum("gpu_seconds"), used_s=Sum("used_gpu_seconds"), idle_s=Sum("idle_gpu_seconds"),
                 last=Max("hour_start"))
_POD_DAY_SUMS = dict(gpu_s=Sum("gpu_seconds"), used_s=Sum("used_gpu_seconds"), idle_s=Sum("idle_gpu_seconds"),
                     last=Max("last_hour"))


class Epoch(Func):
    """A timestamp as whole epoch seconds: read far faster than a datetime (the idle list reads
    one or two per row)."""
    template = "CAST(EXTRACT(EPOCH FROM %(expressions)s) AS bigint)"
    output_field = BigIntegerField()

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="CAST(strftime('%%%%s', %(expressions)s) AS integer)", **extra)


def epoch_instant(epoch: int) -> datetime:
    """Epoch seconds (`Epoch`) as the aware UTC datetime the ORM would have read."""
    return datetime.fromtimestamp(epoch, dt_timezone.utc)


class _PartTeams:
    """`HourTeams.team` at epoch seconds, asked once per namespace and stretch between two team
    changes of the window (every namespace keeps one team between them: `team_changes`)."""

    def __init__(self, f: UsageFilter, rule: HourTeams):
        self.rule, self.cuts, self.known = rule, [int(t.timestamp()) for t in rule.resolver.team_changes(f.start, f.end)], {}

    def __call__(self, cluster_id: int, namespace: str, epoch: int) -> str:
        key = (cluster_id, namespace, bisect_right(self.cuts, epoch))
        team = self.known.get(key)
        if team is None:
            team = self.known[key] = self.rule.team(cluster_id, namespace, epoch_instant(epoch))
        return team


def summary_days(f: UsageFilter, rule: HourTeams) -> dict[int, list[date]]:
    """The days of the window each cluster's idle list reads from the per-pod day summary: whole
    billing days inside it, built in the current zone, with no team change strictly inside."""
    zone = billing_zone()
    cuts = rule.resolver.team_changes(f.start, f.end)
    qs = UsagePodDayBuilt.objects.filter(zone=zone.key, day__gte=day_of(f.start, zone), day__lte=day_of(f.end, zone))
    if f.cluster:
        qs = qs.filter(cluster__name=f.cluster)
    out: dict[int, list[date]] = {}
    for cluster_id, day in qs.values_list("cluster_id", "day").order_by("cluster_id", "day"):
        lo, hi = day_start(day, zone), day_start(day + timedelta(days=1), zone)
        if lo < f.start or hi > f.end or any(lo < t < hi for t in cuts):
            continue
        out.setdefault(cluster_id, []).append(day)
    return out


def _day_spans(days: list[date]) -> list[tuple[datetime, datetime]]:
    """Runs of consecutive days as [first midnight, midnight after the last)."""
    zone, spans = billing_zone(), []
    for day in days:
        lo, hi = day_start(day, zone), day_start(day + timedelta(days=1), zone)
        if spans and spans[-1][1] == lo:
            spans[-1][1] = hi
        else:
            spans.append([lo, hi])
    return [(a, b) for a, b in spans]


def _split(f: UsageFilter, rule: HourTeams, summary: bool):
    """(the summary's rows of the window, the hourly rows of the rest), allocated, in scope. The
    rest is asked for by its ranges of hours (not as the window less the days: that scans them)."""
    hours = _window(UsageHour, f, rule).exclude(namespace="").filter(gpu_seconds__gt=0)
    days = summary_days(f, rule) if summary else {}
    if not days:
        return UsagePodDay.objects.none(), hours
    in_days, rest = Q(pk__in=[]), Q(pk__in=[])
    clusters = Cluster.objects.filter(name=f.cluster) if f.cluster else Cluster.objects.all()
    for cluster_id in clusters.values_list("id", flat=True):
        at = f.start
        for lo, hi in _day_spans(days.get(cluster_id, [])):
            if at < lo:
                rest |= Q(cluster_id=cluster_id, hour_start__gte=at, hour_start__lt=lo)
            at = hi
        if at < f.end:
            rest |= Q(cluster_id=cluster_id, hour_start__gte=at, hour_start__lt=f.end)
        if cluster_id in days:
            in_days |= Q(cluster_id=cluster_id, day__in=days[cluster_id])
    pod_days = UsagePodDay.objects.filter(in_days)
    names = f.namespaces
    if f.teams is not None:
        narrowed = rule.resolver.namespaces_of(f.teams)
        if narrowed is not None and len(narrowed) <= NARROW_MAX_NAMESPACES:
            names = frozenset(narrowed) if names is None else names & narrowed
    if names is not None:
        pod_days = pod_days.filter(namespace__in=names)
    if f.gpu_models is not None:
        pod_days = pod_days.filter(gpu_model__in=f.gpu_models)
    return pod_days, hours.filter(rest)


def pod_totals(f: UsageFilter, rule: HourTeams, summary: bool = True) -> list[dict]:
    """Per (cluster, namespace, pod, team): allocated, used and idle GPU-seconds, first and last hour."""
    pod_days, hours = _split(f, rule, summary)
    keys = ("cluster_id", "namespace", "pod")
    out = {(r["cluster_id"], r["namespace"], r["pod"], r["team"]): r for r in attributed(hours, keys, _POD_SUMS, f, rule)}
    team_at = _PartTeams(f, rule)
    day_rows = (pod_days.values_list(*keys).annotate(_first=Min(Epoch("first_hour")), _last=Max(Epoch("last_hour")),
                                                     gpu_s=Sum("gpu_seconds"), used_s=Sum("used_gpu_seconds"),
                                                     idle_s=Sum("idle_gpu_seconds"))
                .order_by())
    if team_at.cuts:    # a pod's days on both sides of a team change are two rows
        day_rows = day_rows.annotate(_since=rule.since(f.start, f.end, "first_hour"))
    for cluster_id, ns, pod, first, last, gpu_s, used_s, idle_s, *_since in day_rows:
        team = team_at(cluster_id, ns, first)
        if f.teams is not None and team not in f.teams:
            continue
        key = (cluster_id, ns, pod, team)
        row = {"first": epoch_instant(first), "last": epoch_instant(last), "gpu_s": gpu_s, "used_s": used_s, "idle_s": idle_s}
        found = out.get(key)
        if found is None:
            out[key] = {"cluster_id": cluster_id, "namespace": ns, "pod": pod, "team": team, **row}
        else:
            found["first"] = min(found["first"], row["first"])
            _merge(found, row, _POD_SUMS)
    return list(out.values())


def pod_idle_blocks(f: UsageFilter, pods, rule: HourTeams, summary: bool = True):
    """The allocated hours of `pods` ((cluster id, namespace, pod) keys) as idle blocks per
    device: (cluster id, namespace, pod, team, device id, node, fraction at the block's last
    hour, `IdleBlock`), ordered by pod, team, device and time: a whole day of the summary is one
    block, an hour read from the hours another. A stretch never joins hours of two teams."""
    pod_days, hours = _split(f, rule, summary)
    team_at = _PartTeams(f, rule)
    namespaces, names = {k[1] for k in pods}, {k[2] for k in pods}
    out = []
    # namespace IN / pod IN is a superset of the pods that the index serves well.
    for cluster_id, ns, pod, device_id, node, fraction, hour, *idle in (
            hours.filter(namespace__in=namespaces, pod__in=names).annotate(_at=Epoch("hour_start"))
            .values_list("cluster_id", "namespace", "pod", "device_id", "node", "gpu_fraction", "_at",
                         "idle_prefix_seconds", "idle_suffix_seconds", "idle_max_run_seconds", "idle_whole_hour")):
        if (cluster_id, ns, pod) in pods:
            out.append((cluster_id, ns, pod, team_at(cluster_id, ns, hour), device_id, node, fraction,
                        idle_block((hour, *idle))))
    for cluster_id, ns, pod, device_id, node, fraction, first, last, *idle in (
            pod_days.filter(namespace__in=namespaces, pod__in=names)
            .annotate(_first=Epoch("first_hour"), _last=Epoch("last_hour"))
            .values_list("cluster_id", "namespace", "pod", "device_id", "node", "last_fraction", "_first",
                         "_last", "idle_head_seconds", "idle_tail_seconds", "idle_inner_seconds", "idle_whole")):
        if (cluster_id, ns, pod) in pods:
            out.append((cluster_id, ns, pod, team_at(cluster_id, ns, first), device_id, node, fraction,
                        IdleBlock(first, last, *idle)))
    out.sort(key=lambda r: (*r[:5], r[7].first))
    return out


_CELL_SUMS = dict(gpu_s=Sum("gpu_seconds"), used_s=Sum("used_gpu_seconds"), idle_s=Sum("idle_gpu_seconds"),
                  mig_s=Sum("mig_seconds"))


def pod_cells(f: UsageFilter, pods, rule: HourTeams) -> list[dict]:
    """Usage cells of `pods` ((cluster id, namespace, pod) keys) per GPU model, MIG profile,
    price class, billing day and team, in one query, to price them."""
    if not pods:
        return []
    ids = {k[0] for k in pods}
    qs = (_window(UsageHour, f).filter(gpu_seconds__gt=0, namespace__in={k[1] for k in pods},
                                      pod__in={k[2] for k in pods}, cluster_id__in=ids)
          .annotate(price_class=price_class_expr(ids), day=TruncDate("hour_start", tzinfo=billing_zone())))
    rows = attributed(qs, ("cluster_id", "namespace", "pod", "gpu_model", "mig_profile", "price_class", "day"),
                      _CELL_SUMS, f, rule)
    return [r for r in rows if (r["cluster_id"], r["namespace"], r["pod"]) in pods]


def unallocated_rows(f: UsageFilter, cluster_ids: set[int]):
    """Capacity and the part no pod held, per cluster, GPU model, MIG profile, price class and day."""
    return (_window(UsageHour, UsageFilter(start=f.start, end=f.end, cluster=f.cluster))
            .annotate(price_class=price_class_expr(cluster_ids), day=TruncDate("hour_start", tzinfo=billing_zone()))
            .values("cluster_id", "gpu_model", "mig_profile", "price_class", "day")
            .annotate(cap_s=Sum("gpu_seconds"), free_s=Sum("gpu_seconds", filter=Q(namespace="")),
                      free_mig_s=Sum("mig_seconds", filter=Q(namespace=""))).order_by())


# ---- hour grain: the explorer's hourly rows, the idle alerts ---------------------------------

def hour_cells(f: UsageFilter, rule: HourTeams) -> list[dict]:
    """Allocated usage per (cluster, namespace, team, GPU model, MIG profile, price class, hour)."""
    ids = set((Cluster.objects.filter(name=f.cluster) if f.cluster else Cluster.objects.all())
              .values_list("id", flat=True))
    qs = _window(UsageHour, f, rule).exclude(namespace="").annotate(price_class=price_class_expr(ids))
    return attributed(qs, ("cluster_id", "namespace", "gpu_model", "mig_profile", "price_class", "hour_start"),
                      _CELL_SUMS, f, rule)


def idle_hours_since(since: datetime, rule: HourTeams):
    """Every allocated hour since `since` with an idle stretch, as (cluster id, device id,
    namespace, pod, team, hour, idle prefix, idle suffix, longest idle run, whole hour idle,
    fraction, GPU model), ordered by device-pod, team and hour."""
    rows = (UsageHour.objects.filter(hour_start__gte=since).exclude(namespace="")
            .filter(Q(idle_prefix_seconds__gt=0) | Q(idle_suffix_seconds__gt=0) | Q(idle_max_run_seconds__gt=0))
            .order_by("cluster_id", "device_id", "namespace", "pod", "hour_start")
            .values_list("cluster_id", "device_id", "namespace", "pod", "hour_start", "idle_prefix_seconds",
                         "idle_suffix_seconds", "idle_max_run_seconds", "idle_whole_hour", "gpu_fraction",
                         "gpu_model"))
    out = [(c, d, ns, pod, rule.team(c, ns, hour), hour, *rest) for c, d, ns, pod, hour, *rest in rows]
    out.sort(key=lambda r: r[:6])
    return out


def has_usage(start: datetime, end: datetime) -> bool:
    return UsageHour.objects.filter(hour_start__gte=start, hour_start__lt=end).exists()


# ---- day grain: energy, quota use ------------------------------------------------------------

def energy_by_team_day(f: UsageFilter, rule: HourTeams) -> list[dict]:
    """Joules per (cluster, namespace, team, billing day); namespace '' is capacity no pod held
    (kept even for a team scope: the caller decides)."""
    qs = (_window(UsageHour, UsageFilter(start=f.start, end=f.end, cluster=f.cluster)).filter(energy_joules__isnull=False)
          .annotate(day=TruncDate("hour_start", tzinfo=billing_zone())))
    unscoped = UsageFilter(start=f.start, end=f.end, cluster=f.cluster)
    return attributed(qs, ("cluster_id", "namespace", "day"), {"e": Sum("energy_joules")}, unscoped, rule)


def quota_days(f: UsageFilter, resource: str, rule: HourTeams) -> list[dict]:
    """A quota resource per (cluster, namespace, team, billing day): the largest hard limit, the
    largest used and the seconds at the limit."""
    qs = (_window(QuotaHour, f, rule).filter(resource=resource)
          .annotate(day=TruncDate("hour_start", tzinfo=billing_zone())))
    return attributed(qs, ("cluster_id", "namespace", "day"),
                      dict(hard=Max("hard"), used=Max("used_max"), at_hard=Sum("seconds_at_hard")), f, rule)


# ---- device health ---------------------------------------------------------------------------

def health_rows(f: UsageFilter):
    """The health readings of the window (every device of the scope's clusters)."""
    return _window(DeviceHealthHour, UsageFilter(start=f.start, end=f.end, cluster=f.cluster))


def fleet_health_by_device(f: UsageFilter):
    return (health_rows(f).values("device_id", "cluster__name", "device__host", "device__gpu_index",
                                  "device__mig_instance_id", "device__model_name", "device__uuid")
            .annotate(t_max=Max("temperature_c_max"), t_avg=Avg("temperature_c_avg"),
                      hot_max=Max("seconds_above_83c"), hot_sum=Sum("seconds_above_83c"),
                      p_avg=Avg("power_watts_avg"), e_sum=Sum("energy_joules"), xid_n=Sum("xid_samples"))
            .order_by("cluster__name", "device__host", "device__gpu_index", "device__mig_instance_id"))


def fleet_xids(f: UsageFilter):
    return (health_rows(f).filter(xid_samples__gt=0).order_by("hour_start")
            .values_list("device_id", "xid_codes", "hour_start"))


def fleet_health_by_hour(f: UsageFilter):
    return (health_rows(f).values("hour_start")
            .annotate(t_max=Max("temperature_c_max"), t_avg=Avg("temperature_c_avg"), p=Sum("power_watts_avg"))
            .order_by("hour_start"))


HELD_NOTHING = Q(pk__in=[])


def held_hours(f: UsageFilter, rule: HourTeams) -> Q:
    """A filter on the hours the scope's teams' namespaces held GPUs (`f.teams` must be set).

    One query of (cluster, namespace, hour), whatever the number of devices. A namespace that
    was theirs in every hour it held a GPU is matched by name alone (`namespace IN (…)`, per
    cluster); only one that changed hands in the window is matched by its runs of hours — a
    filter of one range per run and namespace took minutes on SQLite for a lead's month
    (docs/performance.md)."""
    hour_len = timedelta(hours=1)
    qs = _window(UsageHour, f, rule).exclude(namespace="")
    runs: dict[tuple[int, str], list[list[datetime]]] = {}
    changed_hands: set[tuple[int, str]] = set()
    for cluster_id, ns, hour in (qs.values_list("cluster_id", "namespace", "hour_start").distinct()
                                 .order_by("cluster_id", "namespace", "hour_start")):
        if rule.team(cluster_id, ns, hour) not in f.teams:
            changed_hands.add((cluster_id, ns))
            continue
        spans = runs.setdefault((cluster_id, ns), [])
        if spans and spans[-1][1] == hour:
            spans[-1][1] = hour + hour_len
        else:
            spans.append([hour, hour + hour_len])
    held = HELD_NOTHING
    whole: dict[int, list[str]] = {}
    for (cluster_id, ns), spans in sorted(runs.items()):
        if (cluster_id, ns) not in changed_hands:
            whole.setdefault(cluster_id, []).append(ns)
            continue
        for a, b in spans:
            held |= Q(cluster_id=cluster_id, namespace=ns, hour_start__gte=a, hour_start__lt=b)
    for cluster_id, whole_names in whole.items():
        held |= Q(cluster_id=cluster_id, namespace__in=whole_names)
    return held


HELD_READINGS = ("device_id", "hour_start", "temperature_c_max", "temperature_c_avg", "seconds_above_83c",
                 "power_watts_avg", "energy_joules", "xid_samples", "xid_codes")


def held_readings(f: UsageFilter, held: Q) -> list[tuple]:
    """The health readings of the device-hours matched by `held` (`held_hours`; a GPU shared by
    time-slicing counts when any of its pods that hour matches), as `HELD_READINGS` tuples.

    Read from the held side: the held (cluster, device, hour) from UsageHour by namespace (its
    index), each reading looked up by DeviceHealthHour's unique (cluster, device, hour) — not a
    subquery per reading, which scanned every hour of the device on SQLite (docs/performance.md)."""
    qs = _window(UsageHour, UsageFilter(start=f.start, end=f.end, cluster=f.cluster)).filter(held)
    reading = DeviceHealthHour.objects.filter(cluster_id=OuterRef("cluster_id"), device_id=OuterRef("device_id"),
                                              hour_start=OuterRef("hour_start"))
    fields = HELD_READINGS[2:]
    rows = (qs.values("cluster_id", "device_id", "hour_start").distinct().order_by()
            .annotate(has=Exists(reading), **{f"r_{x}": Subquery(reading.values(x)[:1]) for x in fields}))
    return [(r["device_id"], r["hour_start"], *(r[f"r_{x}"] for x in fields)) for r in rows if r["has"]]


# ---- namespace grain: the quota advice's histories -------------------------------------------

def first_hours(cluster_ids, end: datetime) -> dict[tuple[int, str], datetime]:
    """When each namespace first appears in the rollups (usage or quota), at any time before end."""
    first: dict[tuple[int, str], datetime] = {}
    usage = (UsageHour.objects.filter(cluster_id__in=cluster_ids, hour_start__lt=end).exclude(namespace="")
             .values("cluster_id", "namespace").annotate(first=Min("hour_start")).order_by())
    quota = (QuotaHour.objects.filter(cluster_id__in=cluster_ids, hour_start__lt=end)
             .values("cluster_id", "namespace").annotate(first=Min("hour_start")).order_by())
    for r in list(usage) + list(quota):
        key = (r["cluster_id"], r["namespace"])
        first[key] = min(first.get(key, r["first"]), r["first"])
    return first


def _advice_window(cluster_ids, start: datetime, end: datetime) -> dict:
    return {"cluster_id__in": cluster_ids, "hour_start__gte": start, "hour_start__lt": end}


def namespace_hours(cluster_ids, start: datetime, end: datetime):
    """Allocated GPU- and MIG-seconds per (cluster, namespace, MIG profile, hour)."""
    return (UsageHour.objects.filter(**_advice_window(cluster_ids, start, end)).exclude(namespace="")
            .values("cluster_id", "namespace", "mig_profile", "hour_start")
            .annotate(gpu_s=Sum("gpu_seconds"), mig_s=Sum("mig_seconds")).order_by())


def namespace_model_totals(cluster_ids, start: datetime, end: datetime):
    """Allocated and used GPU-seconds per (cluster, namespace, MIG profile, GPU model)."""
    return (UsageHour.objects.filter(**_advice_window(cluster_ids, start, end)).exclude(namespace="")
            .values("cluster_id", "namespace", "mig_profile", "gpu_model")
            .annotate(gpu_s=Sum("gpu_seconds"), used_s=Sum("used_gpu_seconds")).order_by())


def quota_hours(cluster_ids, start: datetime, end: datetime) -> list[tuple]:
    """Hours with a hard quota: (cluster id, namespace, resource, hour, hard, used max, seconds at hard)."""
    return list(QuotaHour.objects.filter(**_advice_window(cluster_ids, start, end), hard__isnull=False)
                .values_list("cluster_id", "namespace", "resource", "hour_start", "hard", "used_max",
                             "seconds_at_hard").order_by("hour_start"))


def queued_hours(cluster_ids, start: datetime, end: datetime):
    """Queued demand per (cluster, namespace, requested resource, hour)."""
    return (QueuedDemandHour.objects.filter(**_advice_window(cluster_ids, start, end))
            .values("cluster_id", "namespace", "resource", "hour_start")
            .annotate(q=Sum("queued_gpu_seconds"), requested=Sum("requested")).order_by())


def capacity_by_model(cluster_ids, start: datetime, end: datetime):
    """Capacity seconds per (cluster, MIG profile, GPU model), allocated or not."""
    return (UsageHour.objects.filter(**_advice_window(cluster_ids, start, end))
            .values("cluster_id", "mig_profile", "gpu_model")
            .annotate(s=Sum("gpu_seconds"), mig_s=Sum("mig_seconds")).order_by())
