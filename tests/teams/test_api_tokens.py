"""Personal API tokens (docs/security.md, "API tokens"): made on the user's own page, shown once,
stored as a digest, expiring, read-only or read-write, revocable, scoped like their owner."""
import hashlib
import io
import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from apps.accounting.models import BillingPeriod, Rate
from apps.teams.models import ApiToken, AuditEvent
from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_team, make_usage, utc

pytestmark = pytest.mark.django_db
KEY = re.compile(r"gpp_[0-9a-f]{64}")
PAGE = "/account/tokens/"


@pytest.fixture
def month(team_lead):
    """March 2026: team A (the lead's) used 10 H100 hours in ml, team B 3 in cv."""
    prod = make_cluster()
    make_team("A", lead=team_lead)
    make_namespace(prod, "ml", "A")
    make_namespace(prod, "cv", "B")
    make_rate(hourly_rate="2.00")
    make_usage(make_device(prod), "ml", utc(2026, 3, 1), hours=10)
    make_usage(make_device(prod), "cv", utc(2026, 3, 2), hours=3)
    return prod


def make_token(client, user, name="nightly export", days=30, scope="read_only"):
    client.force_login(user)
    response = client.post(PAGE, {"name": name, "days": days, "scope": scope})
    assert response.status_code == 200
    [key] = KEY.findall(response.content.decode())
    return key


def with_key(key):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return c


@pytest.mark.postgres   # searches every table with information_schema and row_to_json
def test_the_key_is_shown_once_and_the_database_keeps_only_its_digest(client, finance):
    key = make_token(client, finance)
    listing = client.get(PAGE).content.decode()
    assert "nightly export" in listing and key not in listing and not KEY.search(listing)
    token = AuthToken.objects.get()
    assert token.digest == hashlib.sha512(key.encode()).hexdigest()
    assert key.startswith(token.token_key) and len(token.token_key) == 15      # knox's look-up prefix
    # no table of the database holds the key: every row of every table, as JSON text
    with connection.cursor() as cur:
        cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                    "AND table_type = 'BASE TABLE'")
        tables = [t for (t,) in cur.fetchall()]
        holding = []
        for table in tables:
            cur.execute(f'SELECT count(*) FROM "{table}" t WHERE row_to_json(t)::text LIKE %s', [f"%{key}%"])
            if cur.fetchone()[0]:
                holding.append(table)
    assert "knox_authtoken" in tables and holding == []
    assert AuditEvent.objects.filter(action="token.create", target="finance: nightly export").exists()


def test_a_read_only_token_reads_and_every_write_is_403(client, finance, admin_user, month):
    key = make_token(client, finance)
    api = with_key(key)
    assert api.get("/api/v1/chargeback/", {"period": "2026-03"}).json()["totals_by_currency"] == {"USD": "26.00"}
    refused = api.post("/api/v1/chargeback/close/", {"period": "2026-03"})
    assert refused.status_code == 403 and "read-only" in refused.json()["detail"]
    assert not BillingPeriod.objects.filter(period="2026-03", closed_at__isnull=False).exists()
    admin_key = make_token(client, admin_user, name="admin reader")
    rate = Rate.objects.get()
    admin_api = with_key(admin_key)
    assert admin_api.get(f"/api/v1/rates/{rate.pk}/").status_code == 200
    for method in ("put", "patch", "delete"):
        assert getattr(admin_api, method)(f"/api/v1/rates/{rate.pk}/", {"hourly_rate": "9.00"}).status_code == 403
    assert admin_api.post("/api/v1/rates/", {}).status_code == 403
    rate.refresh_from_db()
    assert str(rate.hourly_rate) == "2.000000"


def test_a_read_write_token_may_do_what_its_user_may(client, finance, month):
    api = with_key(make_token(client, finance, scope="read_write"))
    closed = api.post("/api/v1/chargeback/close/", {"period": "2026-03"})
    assert closed.status_code == 200 and closed.json()["closed"] is True
    assert api.post("/api/v1/chargeback/reopen/", {"period": "2026-03"}).status_code == 403   # admins only


def test_an_expired_token_is_401(client, finance, month):
    key = make_token(client, finance, days=7)
    api = with_key(key)
    assert api.get("/api/v1/usage/").status_code == 200
    AuthToken.objects.update(expiry=timezone.now() - timedelta(seconds=1))      # a week later
    assert api.get("/api/v1/usage/").status_code == 401


def test_a_call_reads_only_its_own_token_and_expired_ones_go_when_the_owner_lists_them(client, finance, month):
    """One API call looks up its own token (knox would also read every other token of the owner,
    one more query per call); the owner's expired tokens are removed when they open the list."""
    old_key = make_token(client, finance, name="old export", days=7)
    key = make_token(client, finance, name="nightly export")
    AuthToken.objects.filter(portal__name="old export").update(expiry=timezone.now() - timedelta(seconds=1))
    api = with_key(key)
    api.get("/api/v1/usage/")
    with CaptureQueriesContext(connection) as queries:
        assert api.get("/api/v1/usage/").status_code == 200
    token_reads = [q["sql"] for q in queries.captured_queries if 'FROM "knox_authtoken"' in q["sql"]]
    assert len(token_reads) == 1 and '"token_key" =' in token_reads[0]
    assert AuthToken.objects.count() == 2                       # the expired one is still there ...
    assert with_key(old_key).get("/api/v1/usage/").status_code == 401   # ... refused, and deleted
    assert AuthToken.objects.count() == 1
    make_token(client, finance, name="old export", days=7)
    AuthToken.objects.filter(portal__name="old export").update(expiry=timezone.now() - timedelta(seconds=1))
    listing = client.get(PAGE).content.decode()
    assert "nightly export" in listing and "old export" not in listing
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["nightly export"]


def test_a_revoked_token_is_401_and_only_its_owner_revokes_it(client, finance, viewer, month):
    key = make_token(client, finance)
    info = ApiToken.objects.get()
    client.force_login(viewer)
    assert client.post(f"/account/tokens/{info.pk}/revoke/").status_code == 404
    assert with_key(key).get("/api/v1/usage/").status_code == 200
    client.force_login(finance)
    assert client.post(f"/account/tokens/{info.pk}/revoke/").status_code == 302
    assert with_key(key).get("/api/v1/usage/").status_code == 401
    assert not ApiToken.objects.exists() and not AuthToken.objects.exists()
    assert AuditEvent.objects.filter(action="token.revoke", target="finance: nightly export").exists()
    assert client.get(f"/account/tokens/{info.pk}/revoke/").status_code == 405


def test_a_team_leads_token_sees_only_their_teams(client, team_lead, month):
    api = with_key(make_token(client, team_lead))
    usage = api.get("/api/v1/usage/", {"start": "2026-03-01", "end": "2026-04-01", "group_by": "team"}).json()
    assert [r["key"] for r in usage["results"]] == ["A"]
    assert api.get("/api/v1/chargeback/", {"period": "2026-03", "team": "B"}).status_code == 403
    assert [r["key"] for r in api.get("/api/v1/chargeback/", {"period": "2026-03"}).json()["results"]] == ["A"]


def test_the_list_shows_created_expiry_and_last_use(client, finance, month):
    key = make_token(client, finance, days=90)
    token = AuthToken.objects.get()
    assert timedelta(days=90) - timedelta(minutes=1) < token.expiry - token.created <= timedelta(days=90)
    assert ApiToken.objects.get().last_used_at is None and "never" in client.get(PAGE).content.decode()
    with_key(key).get("/api/v1/usage/")
    assert ApiToken.objects.get().last_used_at is not None
    row = re.search(r'<table class="data" id="tokens">.*?</table>', client.get(PAGE).content.decode(), re.S).group(0)
    assert "nightly export" in row and "read-only" in row and "never" not in row


def test_bad_token_requests_are_400_naming_the_field(client, finance):
    client.force_login(finance)
    for data, message in [({"name": "", "days": 30}, "name: give the token a name"),
                          ({"name": "x", "days": 3650}, "expiry: one of 7, 30, 90, 365 days"),
                          ({"name": "x", "days": "soon"}, "expiry: one of"),
                          ({"name": "x" * 101, "days": 30}, "name: at most 100 characters")]:
        response = client.post(PAGE, data)
        assert response.status_code == 400 and message in response.content.decode(), data
    assert not AuthToken.objects.exists()


def test_old_keys_are_refused_unless_switched_on(finance, month, admin_client):
    """DRF's older keys are plain text and never expire: off by default (docs/api.md, "Tokens"),
    and their admin page, which listed the keys to any staff user allowed to view tokens, is gone."""
    legacy = Token.objects.create(user=finance)
    assert with_key(legacy.key).get("/api/v1/usage/").status_code == 401
    page = admin_client.get("/admin/authtoken/tokenproxy/")
    assert page.status_code == 404 and legacy.key not in page.content.decode()


def test_old_keys_keep_working_beside_new_ones_when_switched_on(finance, month, settings):
    settings.API_LEGACY_TOKENS = True
    legacy = Token.objects.create(user=finance)
    assert with_key(legacy.key).get("/api/v1/usage/").status_code == 200
    assert with_key("gpp_" + "0" * 64).get("/api/v1/usage/").status_code == 401
    assert with_key("not-a-key").get("/api/v1/usage/").status_code == 401


def test_the_command_prints_a_key_once(finance):
    out, err = io.StringIO(), io.StringIO()
    call_command("api_token", "finance", "--name", "cron", "--read-write", "--days", "7", stdout=out, stderr=err)
    key = out.getvalue().strip()
    assert KEY.fullmatch(key) and "read-write" in err.getvalue()
    assert ApiToken.objects.get().read_only is False
    assert with_key(key).get("/api/v1/usage/").status_code == 200


def test_the_schema_names_the_token(finance):
    api = APIClient()
    api.force_authenticate(finance)
    schemes = api.get("/api/v1/schema/", {"format": "json"}).json()["components"]["securitySchemes"]
    assert "portalToken" in schemes and "gpp_" in schemes["portalToken"]["description"]
