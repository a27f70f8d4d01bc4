"""Who may see what (docs/security.md, "Money scope"). Roles are Django groups, and a user may
hold several. Two scopes are computed separately, each from the roles that grant it:

- usage (`team_scope`): every team for admin, finance and viewer; a team lead's own teams;
- money (`money_scope`): every team for admin and finance; a team lead's own teams; none else.

`viewer` widens usage only: a team lead who is also a viewer sees every team's GPU-hours but
only their own teams' money.
"""
ROLE_ADMIN = "admin"
ROLE_FINANCE = "finance"
ROLE_TEAM_LEAD = "team_lead"
ROLE_VIEWER = "viewer"
ROLES = (ROLE_ADMIN, ROLE_FINANCE, ROLE_TEAM_LEAD, ROLE_VIEWER)


def roles_of(user) -> set[str]:
    if not user or not user.is_authenticated:
        return set()
    cached = getattr(user, "_gpuportal_roles", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True)) & set(ROLES)
        if user.is_superuser:
            cached.add(ROLE_ADMIN)
        user._gpuportal_roles = cached
    return cached


def is_admin(user) -> bool:
    return ROLE_ADMIN in roles_of(user)


def can_see_money(user) -> bool:
    """Whether the user may open money pages and endpoints at all (what they show is `money_scope`)."""
    roles = roles_of(user)
    return bool(roles & {ROLE_ADMIN, ROLE_FINANCE, ROLE_TEAM_LEAD})


def money_scope(user):
    """None: every team's money (and the unallocated capacity's). Otherwise the set of team names
    whose money the user may see (maybe empty). Never widened by `viewer`."""
    roles = roles_of(user)
    if roles & {ROLE_ADMIN, ROLE_FINANCE}:
        return None
    if ROLE_TEAM_LEAD in roles:
        return _led_teams(user)
    return set()


def sees_money_of(user, teams) -> bool:
    """Whether money may be shown for figures covering `teams` (None: every team and the
    unallocated capacity): only when all of them are inside the user's money scope."""
    return can_see_money(user) and money_covers(money_scope(user), teams)


def money_covers(scope, teams) -> bool:
    """Whether a money scope (`money_scope`: None for every team) holds all of `teams` (None:
    every team and the unallocated capacity). The one rule every money figure is shown by."""
    if scope is None:
        return True
    return teams is not None and set(teams) <= set(scope)


def can_close_periods(user) -> bool:
    return bool(roles_of(user) & {ROLE_ADMIN, ROLE_FINANCE})


def team_scope(user):
    """None: every team. Otherwise the set of team names the user may see (maybe empty)."""
    roles = roles_of(user)
    if roles & {ROLE_ADMIN, ROLE_FINANCE, ROLE_VIEWER}:
        return None
    if ROLE_TEAM_LEAD in roles:
        return _led_teams(user)
    return set()


def _led_teams(user) -> set[str]:
    cached = getattr(user, "_gpuportal_teams", None)   # one query per request, like the roles
    if cached is None:
        cached = user._gpuportal_teams = frozenset(user.teams.values_list("name", flat=True))
    return set(cached)


def require_team(user, team: str, *, money: bool = False) -> None:
    """A user asking for a team that is not theirs gets an explicit 403, never an empty answer;
    the message is the same whether or not the team exists. A user who may see every team gets
    404 for a team that does not exist (so a made-up name is never computed, nor stored).
    `money`: the team must be in the money scope (statements, FOCUS, forecasts)."""
    scope = money_scope(user) if money else team_scope(user)
    if scope is not None and team not in scope:
        from django.core.exceptions import PermissionDenied

        raise PermissionDenied(f"team {team!r} is not one of yours")
    if scope is None and not team_exists(team):
        from django.http import Http404

        raise Http404(f"no team named {team!r}")


def team_exists(team: str) -> bool:
    from .models import UNASSIGNED, Team

    return team == UNASSIGNED or Team.objects.filter(name=team).exists()


def sees_fleet(user) -> bool:
    """Fleet-wide figures (unallocated capacity, clusters, models) are not for team leads."""
    return team_scope(user) is None
