"""Who may see what. Roles are Django groups; team leads see only their teams' namespaces."""
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
    roles = roles_of(user)
    return bool(roles & {ROLE_ADMIN, ROLE_FINANCE, ROLE_TEAM_LEAD})


def can_close_periods(user) -> bool:
    return bool(roles_of(user) & {ROLE_ADMIN, ROLE_FINANCE})


def team_scope(user):
    """None: every team. Otherwise the set of team names the user may see (maybe empty)."""
    roles = roles_of(user)
    if roles & {ROLE_ADMIN, ROLE_FINANCE, ROLE_VIEWER}:
        return None
    if ROLE_TEAM_LEAD in roles:
        cached = getattr(user, "_gpuportal_teams", None)   # one query per request, like the roles
        if cached is None:
            cached = user._gpuportal_teams = frozenset(user.teams.values_list("name", flat=True))
        return set(cached)
    return set()


def require_team(user, team: str) -> None:
    """A user asking for a team that is not theirs gets an explicit 403, never an empty answer;
    the message is the same whether or not the team exists."""
    scope = team_scope(user)
    if scope is not None and team not in scope:
        from django.core.exceptions import PermissionDenied

        raise PermissionDenied(f"team {team!r} is not one of yours")


def sees_fleet(user) -> bool:
    """Fleet-wide figures (unallocated capacity, clusters, models) are not for team leads."""
    return team_scope(user) is None
