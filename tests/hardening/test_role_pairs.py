"""Money scope for every role and every pair of roles (docs/security.md, "Money scope").

A user may hold several roles (with single sign-on they come straight from the identity
provider's groups). Usage and money are two scopes computed apart: admin or finance in the set
gives every team's money; otherwise a team lead gets their own teams' money and nothing else,
however many teams `viewer` lets them see the hours of; a viewer alone sees no money.

The seed (tests/hardening/seed.py): team acme (led by each lead below) and team zebra, one rate
in SEK, so "SEK" in a body is money shown, and "zebra" in a money-only body is team B's money.
"""
import csv
import io
import itertools
import zipfile

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail

from apps.reports.delivery import deliver_statements
from apps.reports.models import StatementDelivery, StatementRecipient
from apps.teams.access import money_scope, team_scope
from apps.teams.models import Team

from .test_scoping import body_text

COMBOS = [c for n in (1, 2) for c in itertools.combinations(("admin", "finance", "team_lead", "viewer"), n)]
MARK_B = "zebra"


def kind(roles) -> str:
    """What money the combination may see: "all", "lead" (acme's only) or "none"."""
    if {"admin", "finance"} & set(roles):
        return "all"
    return "lead" if "team_lead" in roles else "none"


def ids(combo):
    return "+".join(combo)


@pytest.fixture
def user_with(db, world):
    def make(roles):
        user = User.objects.create_user("u-" + "-".join(roles), email="-".join(roles) + "@example.com")
        user.groups.add(*[Group.objects.get_or_create(name=r)[0] for r in roles])
        if "team_lead" in roles:
            Team.objects.get(name=world.names.team_a).members.add(user)
        return user
    return make


@pytest.fixture
def client_with(client, user_with):
    def make(roles):
        client.force_login(user_with(roles))
        return client
    return make


def money_roads(world):
    """Every GET whose whole answer is money: statements (JSON, CSV, XLSX), the workbook, FOCUS,
    the forecast and the chargeback page, open and closed months."""
    p, closed = world.open_period, world.closed_period
    urls = [f"/api/v1/chargeback/?period={p}&group_by={g}{f}" for g in ("team", "namespace")
            for f in ("", "&format=csv", "&format=xlsx")]
    urls += [f"/api/v1/chargeback/?period={closed}", f"/api/v1/chargeback/?period={p}&shared_idle=spread",
             f"/api/v1/chargeback/xlsx/?period={p}", f"/api/v1/chargeback/xlsx/?period={closed}",
             f"/api/v1/chargeback/focus/?period={p}", f"/api/v1/chargeback/focus/?period={closed}",
             "/api/v1/forecast/", f"/chargeback/?period={p}", f"/chargeback/?period={closed}"]
    return urls


@pytest.mark.parametrize("combo", COMBOS, ids=ids)
def test_scopes_are_computed_apart(user_with, world, combo):
    user = user_with(combo)
    expected_money = {"all": None, "lead": {world.names.team_a}, "none": set()}[kind(combo)]
    assert money_scope(user) == expected_money
    usage_all = {"admin", "finance", "viewer"} & set(combo)
    assert team_scope(user) == (None if usage_all else {world.names.team_a})


@pytest.mark.parametrize("combo", COMBOS, ids=ids)
def test_money_endpoints_pages_and_exports(client_with, world, combo):
    c = client_with(combo)
    k = kind(combo)
    for url in money_roads(world):
        response = c.get(url)
        if k == "none":
            assert response.status_code == 403, f"{combo} {url}: {response.status_code}"
            continue
        assert response.status_code == 200, f"{combo} {url}: {response.status_code}"
        text = body_text(response)
        if k == "lead":
            assert MARK_B not in text, f"{combo} sees team B's money on {url}"
    # Asking for team B's money by name: 403 unless the combination sees every team's money.
    n = world.names
    for url in (f"/api/v1/chargeback/?period={world.open_period}&team={n.team_b}",
                f"/api/v1/chargeback/?period={world.open_period}&team={n.team_b}&format=csv",
                f"/api/v1/chargeback/focus/?period={world.open_period}&team={n.team_b}",
                f"/api/v1/forecast/?team={n.team_b}", f"/chargeback/?period={world.open_period}&team={n.team_b}"):
        assert c.get(url).status_code == (200 if k == "all" else 403), f"{combo} {url}"
    if k != "none":    # the control: the lead's own team's money is there
        text = body_text(c.get(f"/api/v1/chargeback/?period={world.open_period}&format=csv"))
        assert n.team_a in text and "SEK" in text


@pytest.mark.parametrize("combo", COMBOS, ids=ids)
def test_usage_api_cost_only_on_rows_of_the_money_scope(client_with, world, combo):
    c = client_with(combo)
    k = kind(combo)
    n = world.names
    sees_b = k == "all" or "viewer" in combo
    for group_by, key_a, key_b in (("team", n.team_a, n.team_b), ("namespace", n.ns_a, n.ns_b)):
        rows = {r["key"]: r for r in c.get(f"/api/v1/usage/?group_by={group_by}").json()["results"]}
        assert (key_b in rows) == sees_b, combo
        assert (rows[key_a]["cost"] is not None) == (k != "none"), (combo, rows[key_a])
        if key_b in rows:
            assert (rows[key_b]["cost"] is not None) == (k == "all"), (combo, rows[key_b])
            assert (rows[key_b]["currency"] is not None) == (k == "all"), (combo, rows[key_b])
        text = c.get(f"/api/v1/usage/?group_by={group_by}&format=csv").content.decode()
        by_key = {r["key"]: r for r in csv.DictReader(io.StringIO(text))}
        if key_b in by_key:
            assert (by_key[key_b]["cost"] != "") == (k == "all"), (combo, by_key[key_b])
    # A row of a cluster or a GPU model holds the hours of every team the user sees: priced only
    # when all of those are in the money scope (a lead alone sees only their own teams' hours).
    for group_by in ("cluster", "gpu_model"):
        for row in c.get(f"/api/v1/usage/?group_by={group_by}").json()["results"]:
            assert (row["cost"] is not None) == (k == "all" or k == "lead" and not sees_b), (combo, group_by, row)
    if sees_b:   # team B's hours by name: shown, its money not
        [row] = c.get(f"/api/v1/usage/?group_by=team&team={n.team_b}").json()["results"]
        assert row["allocated_gpu_hours"] > 0 and (row["cost"] is not None) == (k == "all")


@pytest.mark.parametrize("combo", COMBOS, ids=ids)
def test_pages_show_money_only_on_figures_of_the_money_scope(client_with, world, combo):
    c = client_with(combo)
    k = kind(combo)
    n = world.names
    a, b = n.team_a, n.team_b
    sees_b = k == "all" or "viewer" in combo
    everyone = {a, b} if sees_b else {a}
    # (page, the teams its figures cover: None for the user's whole usage scope)
    pages = [("/", None), ("/explore/", None), ("/explore/?format=csv", None), ("/explore/?grain=hour", None),
             ("/idle/", None), (f"/teams/{a}/", {a}), (f"/?team={a}", {a}), (f"/explore/?team={a}", {a})]
    if sees_b:
        pages += [(f"/teams/{b}/", {b}), (f"/?team={b}", {b}), (f"/explore/?team={b}", {b}), (f"/idle/?team={b}", {b})]
    for url, covers in pages:
        response = c.get(url)
        assert response.status_code == 200, f"{combo} {url}"
        text = body_text(response)
        allowed = k == "all" or (k == "lead" and (covers or everyone) <= {a})
        if not allowed:
            assert "SEK" not in text, f"{combo} {url}: money shown"
        elif not url.startswith("/idle/"):     # team A has no idle pod to price
            assert "SEK" in text, f"{combo} {url}: money missing"
    # Quota advice: money at stake only on rows of the money scope.
    for row in c.get("/api/v1/quota-recommendations/").json()["results"]:
        allowed = k == "all" or (k == "lead" and row["team"] == n.team_a)
        assert (row["monthly_money_at_stake"] is not None) == allowed, (combo, row["team"])
    # Right-sizing: savings only on rows of the money scope, in the API and on its page.
    for row in c.get("/api/v1/rightsizing/").json()["results"]:
        allowed = k == "all" or (k == "lead" and row["team"] == n.team_a)
        if not allowed:
            assert row["monthly_saving"] is None and row["currency"] is None, (combo, row["team"])
    if not (k == "all" or (k == "lead" and everyone <= {a})):
        assert "SEK" not in body_text(c.get("/advice/rightsizing/")), combo
    # Alerts: a budget alert is money; team B's only for a scope of every team.
    text = c.get("/advice/alerts/").content.decode()
    assert (f"{n.team_b} used 80%" in text) == (k == "all"), combo
    assert (f"{n.team_a} used 80%" in text) == (k != "none"), combo


@pytest.mark.parametrize("combo", COMBOS, ids=ids)
def test_the_mailed_workbook_holds_the_money_scope(user_with, world, settings, combo):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    User.objects.exclude(username__startswith="u-").update(email="")    # only the combination's user
    user = user_with(combo)
    StatementRecipient.objects.create(user=user)      # named, so even an admin alone is sent one
    mail.outbox = []
    failed = deliver_statements(world.open_period, StatementDelivery.Occasion.MONTH_TO_DATE, "edition-1")
    k = kind(combo)
    sent = [m for m in mail.outbox if m.to == [user.email]]
    if k == "none":
        assert sent == [] and len(failed) == 1, combo
        assert "may not see money" in StatementDelivery.objects.get(pk=failed[0]).error
        return
    assert failed == []
    [message] = sent
    [(_, attachment, _)] = message.attachments
    text = xlsx_text(attachment)
    assert world.names.team_a in text and "SEK" in text
    assert (MARK_B in text) == (k == "all"), combo


def xlsx_text(content: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(content)) as z:
        return "".join(z.read(name).decode("utf-8", "replace") for name in z.namelist())
