"""The advice's query parameters, parsed once for the page, the API and the CSV (docs/conventions.md, "One home per concept"):
a bad value is the same 400 or 404 wherever it is given."""
from rest_framework.exceptions import NotFound, ValidationError

from apps.clusters.models import Cluster
from apps.teams.access import can_see_money, money_scope, require_team, team_scope

from .advice import AdviceQuery

MIN_WINDOW_DAYS, MAX_WINDOW_DAYS = 1, 366
# The OpenAPI parameter of both advice endpoints (docs/api.md): its bounds are the parser's.
WINDOW_DAYS_SCHEMA = {"type": "integer", "minimum": MIN_WINDOW_DAYS, "maximum": MAX_WINDOW_DAYS}


def advice_query_for(request) -> AdviceQuery:
    """The same parsing for the page, the API and the CSV."""
    params = request.GET if hasattr(request, "GET") else request.query_params
    cluster = params.get("cluster") or None
    if cluster and not Cluster.objects.filter(name=cluster).exists():
        raise NotFound(f"no cluster named {cluster!r}")
    window_days = None
    if params.get("window_days"):
        try:
            window_days = int(params["window_days"])
        except ValueError:
            window_days = 0
        if not MIN_WINDOW_DAYS <= window_days <= MAX_WINDOW_DAYS:
            raise ValidationError({"window_days": f"window_days must be a whole number of days, "
                                                  f"{MIN_WINDOW_DAYS} to {MAX_WINDOW_DAYS}"})
    scope = team_scope(request.user)
    team = (params.get("team") or "").strip() or None
    if team:   # one team only; a team lead asking for another team's gets 403, like every other view
        require_team(request.user, team)
        teams = frozenset({team})
    else:
        teams = frozenset(scope) if scope is not None else None
    money = money_scope(request.user)      # never widened by `viewer` (docs/security.md, "Money scope")
    return AdviceQuery(cluster=cluster, teams=teams, money=can_see_money(request.user),
                       money_teams=frozenset(money) if money is not None else None, window_days=window_days)
