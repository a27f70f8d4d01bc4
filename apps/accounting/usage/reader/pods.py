"""Per-pod reads for the idle list: totals, idle stretches and cells over a window, whole days
from the per-pod day summary and the rest from the hours (docs/performance.md, "The longest reads").
A part of the rollups' one reader (its package docstring says the rule)."""
from __future__ import annotations

from bisect import bisect_right
from datetime import date, datetime, timedelta
from datetime import timezone as dt_timezone

from django.db.models import BigIntegerField, Func, Max, Min, Q, Sum
from django.db.models.functions import TruncDate

from apps.accounting.calendar.zone import billing_zone, day_of, day_start
from apps.accounting.core.measures import IdleBlock, idle_block
from apps.accounting.models.daily import UsagePodDay, UsagePodDayBuilt
from apps.accounting.models.rollups import UsageHour
from apps.accounting.usage.cells import NARROW_MAX_NAMESPACES, UsageFilter
from apps.accounting.usage.price_classes import price_class_expr
from apps.clusters.models import Cluster

from .teams import HourTeams, _merge, _window, attributed

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
