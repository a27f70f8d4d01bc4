"""A team lead of A gets nothing of team B by any road; viewers get no money; writes need the
right role and CSRF; tokens carry their user's scope; the API throttles per token.

Everything of team B carries the marker "zebra" (team, namespace, pod, cost centre), so a leak
is a substring of a response body; money shows as the currency "SEK".
"""
import io
import re
import zipfile
from urllib.parse import parse_qsl, quote, urlsplit

import pytest
from django.test import Client
from rest_framework.throttling import UserRateThrottle

from apps.accounting.core.currencies import ISO_4217
from apps.accounting.models import BillingPeriod, Rate
from apps.reports.api.rates import CURRENCY_CHOICES

from .test_access_matrix import EXPECT, fill
from tests.support.bodies import body_of
from tests.support.factories import PASSWORD

MARK_B = "zebra"


# The seeded advice puts 1234.00 SEK at stake. Matched as a whole number, so that a latency
# such as 0.0123456 in /metrics (whose figures change from run to run) is never taken for it.
MONEY_AT_STAKE = re.compile(r"(?<![\d.])1,?234(?:\.\d+)?(?![\d])")


RANDOM_TOKENS = re.compile(r'((?:name="csrfmiddlewaretoken" value|nonce|content)=")[A-Za-z0-9+/=_-]{16,}"')


def body_text(response) -> str:
    """The response as text; an XLSX workbook is unzipped and all its XML read. The OpenAPI
    schema's currency pattern — every ISO 4217 code, SEK among them: the standard, not the
    portal's data — is cut out, after checking it is exactly that list."""
    content = b"".join(response.streaming_content) if response.streaming else response.content
    if content[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(content)) as z:
            return "".join(z.read(name).decode("utf-8", "replace") for name in z.namelist())
    # Random tokens (CSRF, CSP nonces) are cut: base64 spells "SEK" now and then
    # ("0iUMmSEKUFC2…" failed a CI run), which is chance, not money shown.
    text = RANDOM_TOKENS.sub(r'\1"', content.decode("utf-8", "replace"))
    pattern = f"^({'|'.join(CURRENCY_CHOICES)})$"
    if pattern in text:
        assert set(CURRENCY_CHOICES) == set(ISO_4217) | {code.lower() for code in ISO_4217}
        text = text.replace(pattern, "")
    return text


def lead_roads(world):
    """Every GET of the access table the lead may open, and every way of asking for team B."""
    n = world.names
    urls = [fill(u, world) for _, (_, st, us) in EXPECT.items() if st[1] == 200 for u in us]
    p = world.open_period
    urls += [
        f"/?team={n.team_b}", f"/explore/?team={n.team_b}", f"/idle/?team={n.team_b}", f"/health/?team={n.team_b}",
        f"/explore/?namespace={n.ns_b}", f"/explore/?namespace={n.ns_b}&format=csv",
        f"/explore/?cluster={n.cluster}&grain=hour&format=csv", f"/teams/{n.team_b}/", "/teams/unassigned/",
        f"/api/v1/idle/?team={n.team_b}", f"/api/v1/idle/?team={n.team_b}&format=csv",
        f"/api/v1/idle/?cluster={n.cluster}&max_utilization=1&min_idle_minutes=0",
        f"/api/v1/usage/?group_by=team&cluster={n.cluster}", f"/api/v1/usage/?group_by=team&team={n.team_b}",
        f"/api/v1/usage/?group_by=namespace&namespace={n.ns_b}&format=csv",
        f"/api/v1/chargeback/?period={p}&group_by=team&team={n.team_b}",
        f"/api/v1/chargeback/?period={p}&group_by=namespace&shared_idle=spread&format=csv",
        f"/api/v1/chargeback/xlsx/?period={world.closed_period}&group_by=namespace",
        f"/api/v1/chargeback/focus/?period={p}&team={n.team_b}",
        f"/api/v1/chargeback/focus/?period={world.closed_period}&team={n.team_b}",
        f"/api/v1/forecast/?team={n.team_b}",
        f"/chargeback/?period={p}&team={n.team_b}", f"/chargeback/?period={world.closed_period}&team={n.team_b}",
        f"/api/v1/quota-recommendations/?cluster={n.cluster}&format=csv", f"/advice/?cluster={n.cluster}",
        f"/api/v1/rightsizing/?team={n.team_b}", f"/api/v1/rightsizing/?team={n.team_b}&format=csv",
        f"/advice/rightsizing/?team={n.team_b}",
        "/api/v1/schema/", "/api/v1/schema/?format=json",
    ]
    return urls


def test_seed_has_team_b_everywhere_for_finance(as_role, world):
    """The control: the same roads do show team B to finance, so silence for the lead means something."""
    c = as_role("finance")
    p = world.open_period
    for url in ["/", "/explore/", "/idle/", "/advice/", "/advice/alerts/", "/api/v1/usage/?group_by=team",
                "/api/v1/idle/?format=csv", f"/api/v1/chargeback/?period={p}&format=csv",
                f"/api/v1/chargeback/xlsx/?period={p}&group_by=namespace", "/api/v1/quota-recommendations/",
                f"/api/v1/chargeback/focus/?period={p}",
                f"/chargeback/?period={p}&team={world.names.team_b}"]:
        response = c.get(url)
        assert response.status_code == 200, url
        assert MARK_B in body_text(response), f"seed does not reach {url}"


def without_echo(text, url, everywhere=False):
    """What the lead typed may be echoed back in a filter box or a link keeping the filters: no leak.
    Only those echoes are removed; the value anywhere else (a table cell) still counts."""
    if everywhere:    # a name typed into the path (/teams/<name>/) is echoed the same way
        for segment in filter(None, urlsplit(url).path.split("/")):
            if segment not in ("teams", "api", "v1"):
                text = text.replace(segment, "")
    for _, value in parse_qsl(urlsplit(url).query):
        if everywhere:
            text = text.replace(value, "")
        text = text.replace(f'value="{value}"', 'value=""')
        text = re.sub(r"([?&](?:amp;)?\w+=)" + re.escape(quote(value)) + r"(?=[&\"'])", r"\1", text)
    return text


def test_team_lead_of_a_gets_nothing_of_team_b(as_role, world):
    c = as_role("team_lead")
    for url in lead_roads(world):
        response = c.get(url)
        assert response.status_code in (200, 403, 404), f"{url}: {response.status_code}"
        text = body_text(response)
        if response.status_code != 200:   # a refusal may quote the request; same answer for a made-up name
            text = without_echo(text, url, everywhere=True)
            assert c.get(url.replace(MARK_B, "nosuch")).status_code == response.status_code, url
        assert MARK_B not in without_echo(text, url).lower(), f"team B leaks through {url}"


def test_team_lead_fleet_group_bys_hold_only_their_own_hours(as_role, world):
    """group_by=cluster for a lead sums their team's hours only (6 h of A), never B's 6 h."""
    data = as_role("team_lead").get(f"/api/v1/usage/?group_by=cluster&cluster={world.names.cluster}").json()
    assert [r["key"] for r in data["results"]] == [world.names.cluster]
    assert data["results"][0]["allocated_gpu_hours"] == pytest.approx(6.0)
    teams = as_role("team_lead").get("/api/v1/usage/?group_by=team").json()["results"]
    assert [r["key"] for r in teams] == [world.names.team_a]


def test_schema_lists_endpoints_but_no_data(as_role, world):
    text = body_text(as_role("admin").get("/api/v1/schema/?format=json"))
    assert "/api/v1/usage/" in text and "/api/v1/chargeback/" in text
    n = world.names
    for value in (n.team_a, n.team_b, n.ns_a, n.ns_b, n.pod_a, n.cluster, "SEK", world.users["admin"].username + "@"):
        assert value not in text, f"schema contains {value!r}"


def test_a_token_sees_what_its_user_sees(db, world):
    c = Client()
    lead = {"HTTP_AUTHORIZATION": f"Token {world.tokens['team_lead']}"}
    rows = c.get("/api/v1/usage/?group_by=team", **lead).json()["results"]
    assert [r["key"] for r in rows] == [world.names.team_a]
    assert c.get("/api/v1/rates/", **lead).status_code == 403
    assert MARK_B not in body_of(c.get(f"/api/v1/chargeback/?period={world.open_period}&format=csv", **lead)).decode()
    viewer = {"HTTP_AUTHORIZATION": f"Token {world.tokens['viewer']}"}
    assert c.get(f"/api/v1/chargeback/?period={world.open_period}", **viewer).status_code == 403
    assert c.get("/api/v1/usage/", HTTP_AUTHORIZATION="Token not-a-token").status_code == 401
    admin = {"HTTP_AUTHORIZATION": f"Token {world.tokens['admin']}"}
    assert {r["key"] for r in c.get("/api/v1/usage/?group_by=team", **admin).json()["results"]} >= {
        world.names.team_a, world.names.team_b}


# ------------------------------------------------------------------ viewers: no money

def test_viewer_sees_no_money_anywhere(as_role, world):
    c = as_role("viewer")
    for g in ("team", "namespace", "cluster", "gpu_model"):
        rows = c.get(f"/api/v1/usage/?group_by={g}").json()["results"]
        assert rows and all(r["cost"] is None and r["currency"] is None for r in rows)
    advice = c.get("/api/v1/quota-recommendations/").json()["results"]
    assert advice and all(r["monthly_money_at_stake"] is None and r["currency"] is None for r in advice)
    for url in [f"/api/v1/chargeback/?period={world.open_period}", "/api/v1/chargeback/xlsx/", "/chargeback/",
                "/api/v1/chargeback/focus/", "/api/v1/forecast/"]:
        assert c.get(url).status_code == 403, url
    pages = [fill(u, world) for _, (_, st, us) in EXPECT.items() if st[0] == 200 for u in us]
    for url in pages + [f"/teams/{world.names.team_a}/", "/api/v1/idle/?format=csv"]:
        text = body_text(c.get(url))
        if urlsplit(url).path == "/metrics":
            # Sample values there are the portal's own counts and timings; the labels are what could leak.
            text = "\n".join(line.rsplit(" ", 1)[0] for line in text.splitlines())
        assert "SEK" not in text and not MONEY_AT_STAKE.search(text), f"money on {url} for a viewer"


def test_finance_does_see_the_money_the_viewer_does_not(as_role, world):
    c = as_role("finance")
    assert "SEK" in body_text(c.get(f"/teams/{world.names.team_a}/"))
    assert {r["currency"] for r in c.get("/api/v1/usage/?group_by=team").json()["results"]} == {"SEK"}


# ------------------------------------------------------------------ writes: role and CSRF

def csrf_client(world, role):
    c = Client(enforce_csrf_checks=True)
    c.force_login(world.users[role])
    return c


def csrf_token(c, url="/accounts/login/"):
    page = c.get(url).content.decode()
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)


@pytest.mark.parametrize("role", ["anonymous", "viewer", "team_lead"])
def test_close_and_reopen_refused_for_the_wrong_roles(as_role, world, role):
    c = as_role(role)
    for path, period in (("/api/v1/chargeback/close/", world.open_period),
                         ("/api/v1/chargeback/reopen/", world.closed_period)):
        assert c.post(path, {"period": period}).status_code in (401, 403), path
    r = c.post("/chargeback/close/", {"period": world.open_period})
    assert r.status_code == 403 or r["Location"].startswith("/accounts/login/")
    assert BillingPeriod.objects.get(period=world.closed_period).is_closed


def test_finance_may_close_but_not_reopen(as_role, world):
    c = as_role("finance")
    assert c.post("/api/v1/chargeback/reopen/", {"period": world.closed_period}).status_code == 403
    assert BillingPeriod.objects.get(period=world.closed_period).is_closed
    prev = world.closed_period[:5] + f"{int(world.closed_period[5:]) % 12 + 1:02d}"
    assert c.post("/api/v1/chargeback/close/", {"period": prev}).status_code == 200


@pytest.mark.parametrize("role", ["anonymous", "viewer", "team_lead", "finance"])
def test_rate_changes_refused_for_all_but_admins(as_role, world, role):
    c = as_role(role)
    before = list(Rate.objects.values_list("pk", "hourly_rate"))
    body = {"gpu_model": "X", "hourly_rate": "1", "currency": "USD", "effective_from": "2026-01-01",
            "price_class": "on_demand"}
    pk = world.rate.pk
    assert c.post("/api/v1/rates/", body).status_code in (401, 403)
    assert c.patch(f"/api/v1/rates/{pk}/", {"hourly_rate": "0"}, content_type="application/json").status_code in (
        401, 403)
    assert c.delete(f"/api/v1/rates/{pk}/").status_code in (401, 403)
    assert list(Rate.objects.values_list("pk", "hourly_rate")) == before


def test_session_writes_without_csrf_are_refused(db, world):
    finance = csrf_client(world, "finance")
    r = finance.post("/api/v1/chargeback/close/", {"period": "2025-01"})
    assert r.status_code == 403 and "CSRF" in r.json()["detail"]
    assert finance.post("/chargeback/close/", {"period": "2025-01"}).status_code == 403
    admin = csrf_client(world, "admin")
    assert admin.post("/api/v1/chargeback/reopen/", {"period": world.closed_period}).status_code == 403
    assert admin.patch(f"/api/v1/rates/{world.rate.pk}/", {"hourly_rate": "0"},
                       content_type="application/json").status_code == 403
    assert admin.post("/accounts/logout/").status_code == 403
    assert admin.post("/admin/accounting/rate/add/", {"gpu_model": "X", "hourly_rate": "1", "currency": "USD",
                                                      "effective_from": "2026-01-01"}).status_code == 403
    anonymous = Client(enforce_csrf_checks=True)
    assert anonymous.post("/accounts/login/", {"username": "admin", "password": PASSWORD}).status_code == 403
    assert not BillingPeriod.objects.filter(period="2025-01", closed_at__isnull=False).exists()
    assert BillingPeriod.objects.get(period=world.closed_period).is_closed
    # With the token from the page, the same session write goes through.
    token = csrf_token(finance, "/chargeback/close/?period=2025-01")
    r = finance.post("/chargeback/close/", {"period": "2025-01", "csrfmiddlewaretoken": token})
    assert r.status_code == 302
    assert BillingPeriod.objects.get(period="2025-01").is_closed


def test_token_writes_need_no_csrf_but_the_right_user(db, world):
    c = Client(enforce_csrf_checks=True)
    admin = {"HTTP_AUTHORIZATION": f"Token {world.tokens['admin']}"}
    r = c.patch(f"/api/v1/rates/{world.rate.pk}/", {"hourly_rate": "4.5"}, content_type="application/json", **admin)
    assert r.status_code == 200 and r.json()["hourly_rate"] == "4.500000"
    finance = {"HTTP_AUTHORIZATION": f"Token {world.tokens['finance']}"}
    assert c.patch(f"/api/v1/rates/{world.rate.pk}/", {"hourly_rate": "0"}, content_type="application/json",
                   **finance).status_code == 403


# ------------------------------------------------------------------ CSRF on every form

FORM = re.compile(r"<form\b[^>]*>.*?</form>", re.S | re.I)


def test_every_post_form_carries_a_csrf_token(as_role, world):
    seen = 0
    for role in ("anonymous", "viewer", "team_lead", "finance", "admin"):
        c = as_role(role)
        urls = [fill(u, world) for _, (_, st, us) in EXPECT.items() for u in us if "format=" not in u]
        urls += ["/admin/accounting/rate/add/", "/admin/teams/team/add/", f"/admin/accounting/rate/{world.rate.pk}/change/"]
        for url in urls:
            response = c.get(url)
            if response.status_code != 200 or "html" not in response.get("Content-Type", ""):
                continue
            for form in FORM.findall(response.content.decode()):
                method = re.search(r'method="?(\w+)', form[:200], re.I)
                if method and method.group(1).lower() == "post":
                    seen += 1
                    assert 'name="csrfmiddlewaretoken"' in form, f"{role} {url}: a POST form without CSRF"
    assert seen >= 10


# ------------------------------------------------------------------ throttling per token

def test_the_api_throttles_each_token_separately(db, world, monkeypatch):
    from django.core.cache import cache
    cache.clear()
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "3/min"})
    c = Client()
    lead = {"HTTP_AUTHORIZATION": f"Token {world.tokens['team_lead']}"}
    finance = {"HTTP_AUTHORIZATION": f"Token {world.tokens['finance']}"}
    codes = [c.get("/api/v1/idle/", **lead).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    assert "Retry-After" in c.get("/api/v1/idle/", **lead)
    assert c.get("/api/v1/idle/", **finance).status_code == 200
    cache.clear()
