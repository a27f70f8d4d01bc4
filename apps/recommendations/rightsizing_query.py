"""Right-sizing's query parameters, parsed once for the page, the API and the CSV: the quota
advice's (`cluster`, `window_days`) plus `team`. A bad value is the same 4xx everywhere."""
from django.core.exceptions import PermissionDenied
from rest_framework.exceptions import NotFound, ValidationError

from apps.teams.models import UNASSIGNED, Team

from .query import advice_query_for
from .rightsizing_rows import RightsizeQuery


def rightsize_query_for(request) -> RightsizeQuery:
    q = advice_query_for(request)
    params = request.GET if hasattr(request, "GET") else request.query_params
    team = params.get("team") or None
    if team is not None and "\x00" in team:
        raise ValidationError({"team": "team must not contain a NUL character"})
    if team is not None:
        if q.teams is not None and team not in q.teams:
            raise PermissionDenied(f"team {team!r} is not one of yours")
        if team != UNASSIGNED and not Team.objects.filter(name=team).exists():
            raise NotFound(f"no team named {team!r}")
    return RightsizeQuery(cluster=q.cluster, teams=q.teams, team=team, money=q.money, money_teams=q.money_teams,
                          window_days=q.window_days)
