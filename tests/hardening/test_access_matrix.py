"""Who may open what: every URL pattern of the project × every role, generated from the URL conf.

A pattern with no row in EXPECT fails `test_route` below, so a new endpoint cannot ship without a
decision about who may use it. Statuses per role: (viewer, team_lead, finance, admin); the
anonymous visitor is sent to sign in on pages ("login"), refused on the API ("api": 401/403),
or sent to the admin's own sign-in ("admin-login").

A user may hold two roles (with single sign-on, straight from the provider's groups): every pair
opens what either role opens (`test_route_for_a_pair_of_roles`); what money each pair sees once
in is tests/hardening/test_role_pairs.py.
"""
import itertools

import pytest
from django.contrib.auth.models import Group, User

from .urlwalk import routes

ROLES = ("anonymous", "viewer", "team_lead", "finance", "admin")
ALL = (200, 200, 200, 200)
MONEY = (403, 200, 200, 200)
CLOSERS = (403, 403, 200, 200)
ADMINS = (403, 403, 403, 200)

# route -> (anonymous, statuses per role, GET urls checked with those statuses)
EXPECT = {
    # Probes for load balancers and Prometheus: no sign-in, nothing per team (docs/ingest.md, "The portal's own health").
    "healthz": (200, ALL, ["/healthz"]),
    "livez": (200, ALL, ["/livez"]),
    "favicon.ico": (301, (301, 301, 301, 301), ["/favicon.ico"]),
    "metrics": (200, ALL, ["/metrics"]),
    "": ("login", ALL, ["/", "/?cluster={cluster}"]),
    "teams/<path:name>/": ("login", ALL, ["/teams/{team_a}/"]),
    "explore/": ("login", ALL, ["/explore/", "/explore/?format=csv", "/explore/?grain=hour"]),
    "idle/": ("login", ALL, ["/idle/"]),
    "health/": ("login", ALL, ["/health/"]),
    "admin-tools/ingest/": ("login", ADMINS, ["/admin-tools/ingest/"]),
    "admin-tools/claims/": ("login", ADMINS, ["/admin-tools/claims/"]),
    "admin-tools/rates/": ("login", ADMINS, ["/admin-tools/rates/"]),
    # An upload's progress and result (tests/reports/test_rate_import_progress.py).
    "admin-tools/rates/imports/<int:pk>/": ("login", ADMINS, ["/admin-tools/rates/imports/{rate_import}/"]),
    # Everyone's own API tokens (docs/security.md, "API tokens"); revoking is POST only.
    "account/tokens/": ("login", ALL, ["/account/tokens/"]),
    "account/tokens/<int:pk>/revoke/": ("login", (405,) * 4, ["/account/tokens/1/revoke/"]),
    "advice/": ("login", ALL, ["/advice/", "/advice/?cluster={cluster}"]),
    "advice/alerts/": ("login", ALL, ["/advice/alerts/"]),
    "advice/rightsizing/": ("login", ALL, ["/advice/rightsizing/", "/advice/rightsizing/?cluster={cluster}"]),
    "chargeback/": ("login", MONEY, ["/chargeback/", "/chargeback/?period={open_period}&team={team_a}",
                                     "/chargeback/?period={closed_period}"]),
    "chargeback/close/": ("login", CLOSERS, ["/chargeback/close/?period={open_period}"]),
    # POST only (CSRF-protected), admins only: tests/reports/test_every_job_reachable.py
    "chargeback/reopen/": ("login", (405,) * 4, ["/chargeback/reopen/"]),
    "accounts/login/": (200, ALL, ["/accounts/login/"]),
    "accounts/logout/": (405, (405,) * 4, ["/accounts/logout/"]),   # POST only (CSRF-protected)
    "admin/": ("admin-login", (302, 302, 302, 200), ["/admin/", "/admin/accounting/rate/"]),
    "api/v1/usage/": ("api", ALL, ["/api/v1/usage/?group_by=" + g + f for g in
                                   ("team", "namespace", "cluster", "gpu_model") for f in ("", "&format=csv")]),
    "api/v1/quota-recommendations/": ("api", ALL, ["/api/v1/quota-recommendations/",
                                                   "/api/v1/quota-recommendations/?format=csv"]),
    "api/v1/rightsizing/": ("api", ALL, ["/api/v1/rightsizing/", "/api/v1/rightsizing/?format=csv"]),
    "api/v1/chargeback/": ("api", MONEY, ["/api/v1/chargeback/?period={open_period}&group_by=" + g + f
                                          for g in ("team", "namespace") for f in ("", "&format=csv", "&format=xlsx")]
                           + ["/api/v1/chargeback/?period={closed_period}"]),
    "api/v1/chargeback/xlsx/": ("api", MONEY, ["/api/v1/chargeback/xlsx/?period={open_period}"]),
    "api/v1/chargeback/focus/": ("api", MONEY, ["/api/v1/chargeback/focus/?period={open_period}",
                                                "/api/v1/chargeback/focus/?period={closed_period}&legacy_names=omit",
                                                "/api/v1/chargeback/focus/?period={open_period}&focus_version=1.3"
                                                "&shared_idle=spread"]),
    "api/v1/forecast/": ("api", MONEY, ["/api/v1/forecast/", "/api/v1/forecast/?format=csv"]),
    "api/v1/chargeback/close/": ("api", (405,) * 4, ["/api/v1/chargeback/close/"]),    # POST: see below
    "api/v1/chargeback/reopen/": ("api", (405,) * 4, ["/api/v1/chargeback/reopen/"]),
    "api/v1/rates/": ("api", ADMINS, ["/api/v1/rates/", "/api/v1/rates/?format=csv"]),
    "api/v1/rates/<int:pk>/": ("api", ADMINS, ["/api/v1/rates/{rate_pk}/"]),
    "api/v1/idle/": ("api", ALL, ["/api/v1/idle/", "/api/v1/idle/?format=csv"]),
    "api/v1/schema/": ("api", ALL, ["/api/v1/schema/"]),
    "api/v1/docs/": ("login", ALL, ["/api/v1/docs/"]),      # Swagger UI: a page, so sign in first
    "api/v1/redoc/": ("login", ALL, ["/api/v1/redoc/"]),
    "api-docs-assets/redoc.standalone.js": ("login", ALL, ["/api-docs-assets/redoc.standalone.js"]),
    "api/v1/": ("api", ALL, ["/api/v1/"]),
}

ROUTES = routes()


def fill(url, world):
    n = world.names
    return url.format(cluster=n.cluster, team_a=n.team_a, team_b=n.team_b, open_period=world.open_period,
                      closed_period=world.closed_period, rate_pk=world.rate.pk,
                      rate_import=world.extra["rate_import"])


def test_every_route_is_walked_and_every_expectation_is_live():
    assert len(ROUTES) >= 20
    stale = set(EXPECT) - set(ROUTES)
    assert not stale, f"expectations for routes that no longer exist: {sorted(stale)}"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("route", ROUTES)
def test_route(as_role, world, route, role):
    if route not in EXPECT:
        pytest.fail(f"URL pattern {route!r} has no access decision in EXPECT: add one")
    anonymous, statuses, urls = EXPECT[route]
    client = as_role(role)
    for raw in urls:
        url = fill(raw, world)
        response = client.get(url)
        if role != "anonymous":
            expected = statuses[ROLES.index(role) - 1]
            assert response.status_code == expected, f"{role} GET {url}: {response.status_code}"
            if expected == 302:
                assert response["Location"].startswith("/admin/login/")
        elif anonymous == "login":
            assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url
        elif anonymous == "admin-login":
            assert response.status_code == 302 and response["Location"].startswith("/admin/login/"), url
        elif anonymous == "api":
            assert response.status_code in (401, 403), f"anonymous GET {url}: {response.status_code}"
        else:
            assert response.status_code == anonymous, f"anonymous GET {url}: {response.status_code}"


PAIRS = list(itertools.combinations(ROLES[1:], 2))


def pair_status(statuses, pair):
    """A pair opens what either of its roles opens; refused, it gets the first role's refusal."""
    held = [statuses[ROLES.index(r) - 1] for r in pair]
    return 200 if 200 in held else held[0]


@pytest.mark.parametrize("pair", PAIRS, ids="+".join)
@pytest.mark.parametrize("route", ROUTES)
def test_route_for_a_pair_of_roles(db, world, client, route, pair):
    if route not in EXPECT:
        pytest.fail(f"URL pattern {route!r} has no access decision in EXPECT: add one")
    _, statuses, urls = EXPECT[route]
    user = User.objects.create_user("+".join(pair), is_staff="admin" in pair, is_superuser="admin" in pair)
    user.groups.add(*[Group.objects.get_or_create(name=r)[0] for r in pair])
    if "team_lead" in pair:
        world.users["team_lead"].teams.first().members.add(user)
    client.force_login(user)
    expected = pair_status(statuses, pair)
    for raw in urls:
        url = fill(raw, world)
        response = client.get(url)
        assert response.status_code == expected, f"{'+'.join(pair)} GET {url}: {response.status_code}"
        if expected == 302:
            assert response["Location"].startswith("/admin/login/")
