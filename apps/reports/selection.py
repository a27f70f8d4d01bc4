"""The page-wide picker (cluster, team, date range) read from the URL, scoped by role.

Pages, the idle API and the CSV downloads all build their filter here, so a team lead's
scope is applied in one place: a `team` outside the scope is refused, and without a `team`
the filter still holds only the teams the user may see.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timezone as dt_timezone
from urllib.parse import urlencode

from django.http import Http404
from django.utils import timezone

from apps.accounting.usage import UsageFilter, billing_zone
from apps.clusters.models import Cluster
from apps.reports.api.params import parse_window
from apps.teams.access import is_admin, require_team, sees_fleet, sees_money_of, team_scope

from . import presets

PICKER_KEYS = ("cluster", "team", "start", "end")


@dataclass(frozen=True)
class Selection:
    start: datetime
    end: datetime
    cluster: str | None
    team: str | None
    scope: frozenset[str] | None      # teams the user may see; None: all
    fleet: bool                       # may see fleet-wide figures (capacity, unallocated)
    money: bool                       # may see the money of every team the figures cover
    admin: bool
    query: dict                       # the picker's raw GET values, for links that keep them
    preset: str = presets.CUSTOM      # the date preset the window is (presets.py), or custom
    today: date | None = None         # the billing-zone date the presets count from

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

    @property
    def canonical_querystring(self) -> str:
        """The picker as parsed, in one spelling whatever the URL said: a window given by dates
        and times is written as billing-zone dates when it starts and ends on midnights, else as
        UTC instants; a window left out stays out (the default preset, relative to today).
        What a stored answer is keyed by (docs/security.md, "Stored answers"): 2026-03-01,
        2026-03-01T00:00 and 2026-03-01T00:00:00+00:00 are one answer, not three."""
        q = {"cluster": self.cluster or "", "team": self.team or ""}
        if self.query.get("start") or self.query.get("end"):
            q["start"], q["end"] = _spelled(self.start), _spelled(self.end)
        return urlencode({k: v for k, v in q.items() if v})


def selection_from(request, params=None, *, default_days=7, page=False) -> Selection:
    """Parse and authorise the picker. Raises DRF ValidationError (bad dates), Http404, PermissionDenied.

    Pages (`page=True`) without dates show the default preset, whole billing-zone days the
    picker's date inputs can show exactly; the API keeps its rolling window."""
    params = request.GET if params is None else params
    today = timezone.now().astimezone(billing_zone()).date()
    preset = presets.matching(params.get("start"), params.get("end"), today)
    window_params = params
    if page and not params.get("start") and not params.get("end"):
        default = presets.preset_named(presets.DEFAULT, today)
        window_params = {"start": default.start.isoformat(), "end": default.end.isoformat()}
    start, end = parse_window(window_params, default_days=default_days)
    user = request.user
    scope = team_scope(user)
    cluster = (params.get("cluster") or "").strip() or None
    if cluster and not Cluster.objects.filter(name=cluster).exists():
        raise Http404(f"no cluster named {cluster!r}")
    team = (params.get("team") or "").strip() or None
    if team:
        require_team(user, team)
    scope = frozenset(scope) if scope is not None else None
    # Money only when every team the figures cover is in the money scope: a team lead who is
    # also a viewer sees the whole fleet's hours, its money only on their own teams' figures
    # (docs/security.md, "Money scope").
    return Selection(
        start=start, end=end, cluster=cluster, team=team, scope=scope,
        fleet=sees_fleet(user), money=sees_money_of(user, frozenset({team}) if team else scope), admin=is_admin(user),
        query={k: params.get(k, "") for k in PICKER_KEYS}, preset=preset, today=today,
    )


def _spelled(dt: datetime) -> str:
    local = dt.astimezone(billing_zone())
    if (local.hour, local.minute, local.second, local.microsecond) == (0, 0, 0, 0):
        return local.date().isoformat()
    return iso_utc(dt)


def iso_utc(dt: datetime) -> str:
    return dt.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z")
