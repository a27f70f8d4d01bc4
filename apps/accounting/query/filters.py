"""The one filter a query string says — a window and a scope — parsed once for every page, API
view, CSV download and the advice (docs/conventions.md, "A query string is parsed once").

`filter_from(params, user)` reads `start` / `end` (or the advice's trailing `window_days`),
`cluster` and `team` from a QueryDict (or any mapping) and gives one frozen `ReportFilter`:
the window in UTC (dates and offset-less times are in the billing zone), the cluster, and the
teams the figures cover, restricted by the viewer's role. It maps onto the rollup reader's
`UsageFilter` (`ReportFilter.usage_filter`).

A refused value is raised without any web framework, so the same value gets the same answer
everywhere:
- `BadParameters` (400) naming each parameter: the pages show it on the 400 page, the API's
  exception handler (`apps.web.drf`) answers it with the JSON body a DRF ValidationError has;
- `PermissionDenied` (403) for a team that is not the viewer's, `UnknownName` (an `Http404`) for a cluster or team
  that does not exist: Django's own, which pages and DRF both answer with their message.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone as dt_timezone
from urllib.parse import urlencode

from django.conf import settings
from django.utils import timezone

from apps.clusters.models import Cluster
from apps.teams.access import (can_see_money, is_admin, money_scope, require_team, sees_fleet, sees_money_of,
                               team_scope)
from apps.web.params import BadParameters, UnknownName

from apps.accounting.query import presets
from apps.accounting.core.periods import parse_period
# The patterns are what the parsers here accept, for the OpenAPI schema to state
# (docs/api.md, "What a value may be").
from apps.accounting.calendar.parse import INSTANT_PATTERN, PERIOD_PATTERN, parse_instant  # noqa: F401
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.usage.cells import UsageFilter

DEFAULT_DAYS = 7
PICKER_KEYS = ("cluster", "team", "start", "end")
MIN_WINDOW_DAYS, MAX_WINDOW_DAYS = 1, 366   # the advice's trailing window_days


@dataclass(frozen=True)
class ReportFilter:
    start: datetime | None            # None: the advice's trailing window (`window_days`)
    end: datetime | None
    cluster: str | None
    team: str | None
    scope: frozenset[str] | None      # teams the user may see; None: all
    fleet: bool                       # may see fleet-wide figures (capacity, unallocated)
    money: bool                       # may see the money of every team the figures cover
    admin: bool
    query: dict                       # the picker's raw GET values, for links that keep them
    preset: str = presets.CUSTOM      # the date preset the window is (presets.py), or custom
    today: date | None = None         # the billing-zone date the presets count from
    money_role: bool = False          # the role may see money at all (`access.can_see_money`)
    money_teams: frozenset[str] | None = None   # whose money (`access.money_scope`; None: every team's)
    window_days: int | None = None    # the advice's trailing days, when given

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


    def download_params(self, **filters) -> dict:
        """What a page's download link carries: the window the page shows, spelled out (billing-zone
        dates on midnights, else UTC instants; the advice's `window_days`), its cluster and team,
        and the page's own `filters` — so the file holds what the page shows whatever the API's
        defaults are (docs/pages.md, "Downloads")."""
        if self.start is None:
            q = {"window_days": self.window_days}
        else:
            q = {"start": _spelled(self.start), "end": _spelled(self.end)}
        q.update(cluster=self.cluster, team=self.team)
        q.update(filters)
        return {k: v for k, v in q.items() if v not in (None, "")}

    def download_url(self, path: str, fmt: str | None = "csv", **filters) -> str:
        """`path` with `download_params(**filters)` and the format (none: the format is the path's)."""
        q = self.download_params(**filters)
        if fmt:
            q["format"] = fmt
        return f"{path}?{urlencode(q)}"

    def download_name(self, what: str, ext: str) -> str:
        """A download's file name, after what it holds: `idle-gpus_2026-11-22_2026-11-29_research.csv`
        (the window's dates, `end` not included, as in the URL; the cluster and team when picked)."""
        if self.start is None:
            parts = [what, f"last-{self.window_days or settings.ADVICE_WINDOW_DAYS}-days"]
        else:
            parts = [what, _spelled(self.start).replace(":", ""), _spelled(self.end).replace(":", "")]
        parts += [p for p in (self.cluster, self.team) if p]
        return "_".join(_FILE_UNSAFE.sub("-", p) for p in parts) + f".{ext}"


_FILE_UNSAFE = re.compile(r"[^A-Za-z0-9.+-]+")


# What a read reads, and so the limit its window has (docs/security.md, "No request ties up the
# portal"): daily figures; hourly rows per pod, whole days of them from the per-pod day summary
# (idle GPUs); every hourly row of each workload, with its percentiles (right-sizing).
DAILY, POD_HOURS, WORKLOAD_HOURS = "daily figures", "hourly rows per pod", "every hourly row of each workload"
_LIMITS = {DAILY: ("MAX_REPORT_DAYS", ""), POD_HOURS: ("MAX_HOURLY_REPORT_DAYS", " for reads of hourly rows"),
           WORKLOAD_HOURS: ("MAX_RIGHTSIZING_DAYS", " for right-sizing, which reads every hourly row")}


def window_limit(reads: str = DAILY) -> tuple[int, str]:
    """(days, setting) a window of a read of `reads` may span: MAX_REPORT_DAYS for daily figures,
    MAX_HOURLY_REPORT_DAYS for hourly rows per pod (idle GPUs), MAX_RIGHTSIZING_DAYS for every
    hourly row of each workload (right-sizing), never more than MAX_REPORT_DAYS."""
    setting = _LIMITS[reads][0]
    return min(getattr(settings, setting), settings.MAX_REPORT_DAYS), setting


def window_rules(reads: str = DAILY) -> str:
    """The rules between start and end, in words, for an endpoint's OpenAPI description (as the
    patterns above are for its parameters), with its window's limit (`window_limit`: hourly reads
    have their own, shorter one)."""
    days, setting = window_limit(reads)
    what = f" (this endpoint reads {reads})" if reads != DAILY else ""
    return ("\n\nRules between parameters (a 400 naming `end`): `end` must be after `start` (`end` "
            "defaults to now, `start` to a week before `end`), and the window may be at most "
            f"{setting} days long ({days} as configured){what}.")


def filter_from(params, user, *, page=False, default_days=DEFAULT_DAYS, trailing=False,
                dates_too=False, reads=DAILY) -> ReportFilter:
    """Parse and authorise a query string's window and scope (the module docstring says how).

    Pages (`page=True`) without dates show the default preset, whole billing-zone days the
    picker's date inputs can show exactly; the API keeps its rolling window. `trailing`: the
    advice's window, `window_days` back from now, instead of `start` / `end`; with `dates_too`,
    `start` / `end` when given (right-sizing over a team page's window; they win over
    `window_days`). `reads`: what the caller reads, which sets the window's limit (`window_limit`)."""
    if trailing and dates_too and (params.get("start") or params.get("end")):
        trailing = False
    today = timezone.now().astimezone(billing_zone()).date()
    if trailing:
        start = end = None
        window_days = parse_window_days(params, reads=reads)
        preset = presets.CUSTOM
    else:
        window_days = None
        preset = presets.matching(params.get("start"), params.get("end"), today)
        window_params = params
        if page and not params.get("start") and not params.get("end"):
            default = presets.preset_named(presets.DEFAULT, today)
            window_params = {"start": default.start.isoformat(), "end": default.end.isoformat()}
        start, end = parse_window(window_params, default_days=default_days, reads=reads)
    cluster = (params.get("cluster") or "").strip() or None
    if cluster and not Cluster.objects.filter(name=cluster).exists():
        raise UnknownName(f"no cluster named {cluster!r}")
    team = (params.get("team") or "").strip() or None
    if team:
        require_team(user, team)    # 403 for a team not the viewer's, 404 for one that does not exist
    scope = team_scope(user)
    scope = frozenset(scope) if scope is not None else None
    money_teams = money_scope(user)    # never widened by `viewer` (docs/security.md, "Money scope")
    # Money only when every team the figures cover is in the money scope: a team lead who is
    # also a viewer sees the whole fleet's hours, its money only on their own teams' figures
    # (docs/security.md, "Money scope").
    return ReportFilter(
        start=start, end=end, cluster=cluster, team=team, scope=scope,
        fleet=sees_fleet(user), money=sees_money_of(user, frozenset({team}) if team else scope), admin=is_admin(user),
        query={k: params.get(k, "") for k in PICKER_KEYS}, preset=preset, today=today,
        money_role=can_see_money(user), money_teams=frozenset(money_teams) if money_teams is not None else None,
        window_days=window_days,
    )


def parse_window(params, *, default_days=DEFAULT_DAYS, reads=DAILY) -> tuple[datetime, datetime]:
    """(start, end) from ?start=&end= (ISO 8601 instants or dates), defaulting to the last week.

    Dates and offset-less times are in the billing time zone (docs/dates-and-money.md); the
    answer is in UTC, and every bad value is refused naming its parameter.
    """
    errors = {}
    now = timezone.now().replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    start = end = None
    try:
        end = parse_instant(params["end"], name="end") if params.get("end") else now
    except ValueError as exc:
        errors["end"] = str(exc)
    try:
        if params.get("start"):
            start = parse_instant(params["start"], name="start")
        elif end is not None:
            start = end - timedelta(days=default_days)
    except ValueError as exc:
        errors["start"] = str(exc)
    if errors:
        raise BadParameters(errors)
    if end <= start:
        raise BadParameters({"end": f"end ({end.isoformat()}) must be after start ({start.isoformat()})"})
    limit, setting = window_limit(reads)
    if end - start > timedelta(days=limit):
        what = _LIMITS[reads][1]
        raise BadParameters({"end": f"the window is {(end - start).days} days; the limit{what} is {limit} days "
                                    f"({setting})"})
    return start, end


def parse_window_days(params, *, reads=DAILY) -> int | None:
    """The advice's trailing window: whole days, 1 to 366 (to the limit of what it reads,
    `window_limit`, when shorter); absent: the configured default."""
    if not params.get("window_days"):
        return None
    try:
        days = int(params["window_days"])
    except ValueError:
        days = 0
    most = max_window_days(reads)
    if not MIN_WINDOW_DAYS <= days <= most:
        reason = f" ({window_limit(reads)[1]}: this reads {reads})" if most < MAX_WINDOW_DAYS else ""
        raise BadParameters({"window_days": f"window_days must be a whole number of days, "
                                            f"{MIN_WINDOW_DAYS} to {most}{reason}"})
    return days


def max_window_days(reads=DAILY) -> int:
    """The largest `window_days` the advice takes: 366, or the limit of what it reads when shorter."""
    return min(MAX_WINDOW_DAYS, window_limit(reads)[0])


def parse_choice(params, name, choices, default=None):
    """One of `choices`; absent: `default`. Present but empty is refused like any value outside
    them (the OpenAPI schema lists the choices as an enum, docs/api.md)."""
    value = params.get(name)
    if value == "":
        raise BadParameters({name: f"{name} is empty: give one of {', '.join(choices)}"})
    if value is None:
        value = default
    if value is None:
        raise BadParameters({name: f"{name} is required: one of {', '.join(choices)}"})
    if value not in choices:
        raise BadParameters({name: f"{name}={value!r} is not one of {', '.join(choices)}"})
    return value


def parse_period_param(params, name="period", default=None) -> str:
    """A billing month like 2026-03 (the chargeback page, its API, CSV, XLSX, FOCUS, forecast)."""
    if not hasattr(params, "get"):      # a request body that is a JSON array or a bare value
        raise BadParameters({name: f"send an object with {name}, e.g. {{\"{name}\": \"2026-03\"}}"})
    value = params.get(name) or default
    if value is None:
        raise BadParameters({name: f"{name} is required: a month like 2026-03"})
    try:
        return parse_period(value)
    except ValueError as exc:
        raise BadParameters({name: str(exc)})


def iso_utc(dt: datetime) -> str:
    return dt.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z")


def _spelled(dt: datetime) -> str:
    local = dt.astimezone(billing_zone())
    if (local.hour, local.minute, local.second, local.microsecond) == (0, 0, 0, 0):
        return local.date().isoformat()
    return iso_utc(dt)
