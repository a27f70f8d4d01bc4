"""The utilization explorer: one function builds the rows that the table, the heatmap and the CSV show."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db.models import Sum
from rest_framework.exceptions import ValidationError

from apps.accounting.figures import efficiency, shown_hours, shown_ratio
from apps.accounting.usage import billing_zone, usage_cells
from apps.accounting.models import UsageHour
from apps.clusters.models import Cluster
from apps.teams.resolve import TeamResolver

from ..selection import Selection

GRAINS = ("hour", "day", "week")
MAX_HOURLY_DAYS = 7
CSV_COLUMNS = ["period_start", "cluster", "team", "namespace", "gpu_model",
               "allocated_gpu_hours", "used_gpu_hours", "idle_gpu_hours", "efficiency"]


@dataclass(frozen=True)
class ExploreOptions:
    namespace: str | None = None
    gpu_model: str | None = None
    grain: str = "day"
    note: str = ""          # why the grain shown is not the one asked for


@dataclass
class ExploreRow:
    period_start: date | datetime
    cluster: str
    team: str
    namespace: str
    gpu_model: str
    allocated_gpu_seconds: float = 0.0
    used_gpu_seconds: float = 0.0
    idle_gpu_seconds: float = 0.0

    @property
    def efficiency(self) -> float | None:
        return efficiency(self.used_gpu_seconds, self.allocated_gpu_seconds)

    def as_dict(self) -> dict:
        return {
            "period_start": self.period_start.isoformat(),
            "cluster": self.cluster, "team": self.team, "namespace": self.namespace, "gpu_model": self.gpu_model,
            "allocated_gpu_hours": shown_hours(self.allocated_gpu_seconds),
            "used_gpu_hours": shown_hours(self.used_gpu_seconds),
            "idle_gpu_hours": shown_hours(self.idle_gpu_seconds),
            "efficiency": shown_ratio(self.efficiency),
        }


@dataclass
class Explored:
    rows: list[ExploreRow]
    heatmap: dict[tuple[str, date], list[float]]   # (team, day) -> [allocated_s, used_s]


def parse_options(params, sel: Selection) -> ExploreOptions:
    grain = params.get("grain") or "day"
    if grain not in GRAINS:
        raise ValidationError({"grain": f"grain={grain!r} is not one of {', '.join(GRAINS)}"})
    note = ""
    if grain == "hour" and sel.end - sel.start > timedelta(days=MAX_HOURLY_DAYS):
        # Any window the picker offers must show something: too long for hours, it shows days.
        days = (sel.end - sel.start) / timedelta(days=1)
        note = (f"Hourly rows cover at most {MAX_HOURLY_DAYS} days and this window spans {days:g}: "
                "shown per day instead. Pick a shorter window for hourly rows.")
        grain = "day"
    return ExploreOptions(namespace=(params.get("namespace") or "").strip() or None,
                          gpu_model=(params.get("gpu_model") or "").strip() or None, grain=grain, note=note)


def _hourly_cells(sel: Selection, opts: ExploreOptions):
    """(cluster, namespace, team, model, hour, local day, seconds...) straight from the hourly rows."""
    qs = UsageHour.objects.filter(hour_start__gte=sel.start, hour_start__lt=sel.end).exclude(namespace="")
    if sel.cluster:
        qs = qs.filter(cluster__name=sel.cluster)
    if opts.namespace:
        qs = qs.filter(namespace=opts.namespace)
    if opts.gpu_model:
        qs = qs.filter(gpu_model=opts.gpu_model)
    rows = (qs.values("cluster_id", "namespace", "gpu_model", "hour_start")
            .annotate(gpu_s=Sum("gpu_seconds"), used_s=Sum("used_gpu_seconds"), idle_s=Sum("idle_gpu_seconds"))
            .order_by())
    names = dict(Cluster.objects.values_list("id", "name"))
    resolver, zone = TeamResolver(), billing_zone()
    for r in rows:
        day = r["hour_start"].astimezone(zone).date()
        team = resolver.team(r["cluster_id"], r["namespace"], day, r["hour_start"])
        yield (names.get(r["cluster_id"], "?"), r["namespace"], team, r["gpu_model"], r["hour_start"], day,
               r["gpu_s"] or 0.0, r["used_s"] or 0.0, r["idle_s"] or 0.0)


def _daily_cells(sel: Selection, opts: ExploreOptions):
    f = sel.usage_filter(namespaces=frozenset({opts.namespace}) if opts.namespace else None,
                         gpu_models=frozenset({opts.gpu_model}) if opts.gpu_model else None)
    for c in usage_cells(f):
        if not c.allocated:
            continue
        bucket = c.day - timedelta(days=c.day.weekday()) if opts.grain == "week" else c.day
        yield (c.cluster, c.namespace, c.team, c.gpu_model, bucket, c.day,
               c.gpu_seconds, c.used_gpu_seconds, c.idle_gpu_seconds)


def explore(sel: Selection, opts: ExploreOptions) -> Explored:
    cells = _hourly_cells(sel, opts) if opts.grain == "hour" else _daily_cells(sel, opts)
    teams = sel.teams
    rows: dict[tuple, ExploreRow] = {}
    heat: dict[tuple[str, date], list[float]] = {}
    for cluster, ns, team, model, bucket, day, gpu_s, used_s, idle_s in cells:
        if teams is not None and team not in teams:
            continue
        key = (bucket, cluster, team, ns, model)
        row = rows.get(key) or rows.setdefault(key, ExploreRow(bucket, cluster, team, ns, model))
        row.allocated_gpu_seconds += gpu_s
        row.used_gpu_seconds += used_s
        row.idle_gpu_seconds += idle_s
        h = heat.setdefault((team, day), [0.0, 0.0])
        h[0] += gpu_s
        h[1] += used_s
    return Explored(rows=[rows[k] for k in sorted(rows)], heatmap=heat)
