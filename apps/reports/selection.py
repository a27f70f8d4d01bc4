"""The page-wide picker (cluster, team, date range) read from the URL, scoped by role.

Pages, the idle API and the CSV downloads all build their filter here, so a team lead's
scope is applied in one place: a `team` outside the scope is refused, and without a `team`
the filter still holds only the teams the user may see.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone as dt_timezone
from urllib.parse import urlencode

from django.http import Http404

from apps.accounting.usage import UsageFilter
from apps.clusters.models import Cluster
from apps.reports.api.params import parse_window
from apps.teams.access import can_see_money, is_admin, require_team, sees_fleet, team_scope

PICKER_KEYS = ("cluster", "team", "start", "end")


@dataclass(frozen=True)
class Selection:
    start: datetime
    end: datetime
    cluster: str | None
    team: str | None
    scope: frozenset[str] | None      # teams the user may see; None: all
    fleet: bool                       # may see fleet-wide figures (capacity, unallocated)
    money: bool
    admin: bool
    query: dict                       # the picker's raw GET values, for links that keep them

    @property
    def teams(self) -> frozenset[str] | None:
        """Teams the figures cover: the picked team, else the user's scope."""
        if self.team:
            return frozenset({self.team})
        return self.scope

    def usage_filter(self, **extra) -> UsageFilter:
        return UsageFilter(start=self.start, end=self.end, cluster=self.cluster, teams=self.teams, **extra)

    @property
    def querystring(self) -> str:
        return urlencode({k: v for k, v in self.query.items() if v})


def selection_from(request, params=None, *, default_days=7) -> Selection:
    """Parse and authorise the picker. Raises DRF ValidationError (bad dates), Http404, PermissionDenied."""
    params = request.GET if params is None else params
    start, end = parse_window(params, default_days=default_days)
    user = request.user
    scope = team_scope(user)
    cluster = (params.get("cluster") or "").strip() or None
    if cluster and not Cluster.objects.filter(name=cluster).exists():
        raise Http404(f"no cluster named {cluster!r}")
    team = (params.get("team") or "").strip() or None
    if team:
        require_team(user, team)
    return Selection(
        start=start, end=end, cluster=cluster, team=team,
        scope=frozenset(scope) if scope is not None else None,
        fleet=sees_fleet(user), money=can_see_money(user), admin=is_admin(user),
        query={k: params.get(k, "") for k in PICKER_KEYS},
    )


def iso_utc(dt: datetime) -> str:
    return dt.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z")
