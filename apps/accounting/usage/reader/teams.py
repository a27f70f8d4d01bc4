"""How a read coarser than the hour is split at every instant a namespace changes team, each part
resolved at its first hour (the rule: docs/teams-and-relabels.md, "Which team owns an hour").
A part of the rollups' one reader (its package docstring says the rule)."""
from __future__ import annotations

from datetime import datetime

from django.db.models import Case, DateTimeField, Max, Min, Value, When

from apps.accounting.calendar.zone import billing_zone
from apps.accounting.models.rollups import UsageHour
from apps.accounting.usage.cells import NARROW_MAX_NAMESPACES, UsageFilter
from apps.accounting.usage.team_mapping import team_resolver
from apps.teams.resolve import TeamResolver


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
