"""GET /api/v1/quota-recommendations/ and /advice/: who sees what, CSV, money."""
import csv
import io

import pytest
import yaml
from rest_framework.test import APIClient

from apps.recommendations import advice
from apps.recommendations.advice import CSV_COLUMNS

from tests.support import factories as f
from .conftest import injected_rate

URL = "/api/v1/quota-recommendations/"


@pytest.fixture
def priced(monkeypatch):
    monkeypatch.setattr(advice, "rate_for", injected_rate)


@pytest.fixture
def users(fleet):
    return {
        "admin": f.make_user("admin", "admin"),
        "finance": f.make_user("finance", "finance"),
        "team_lead": f.make_user("team_lead", "team_lead", teams=[fleet["vision"]]),
        "viewer": f.make_user("viewer", "viewer"),
        "nobody": f.make_user("nobody", None),
    }


def client_for(user):
    c = APIClient()
    c.force_authenticate(user)
    return c


def test_anonymous_is_refused(users):
    assert APIClient().get(URL).status_code in (401, 403)


def test_team_lead_sees_only_own_namespaces(users, priced):
    r = client_for(users["team_lead"]).get(URL, {"cluster": "prod", "window_days": 2})
    assert r.status_code == 200
    body = r.json()
    assert [row["name"] for row in body["results"]] == ["ml"]
    row = body["results"][0]
    assert (row["verdict"], row["target"], row["monthly_money_at_stake"], row["currency"]) == (
        "over_provisioned", 7, "13140.00", "EUR")
    assert yaml.safe_load(row["yaml"])["spec"]["hard"] == {"requests.nvidia.com/gpu": "7"}
    assert body["window_days"] == 2 and body["cluster"] == "prod"


def test_admin_and_finance_see_every_namespace_with_money(users, priced):
    for name in ("admin", "finance"):
        rows = client_for(users[name]).get(URL, {"window_days": 2}).json()["results"]
        assert {r["name"] for r in rows} == {"ml", "infer", "scratch", "empty", "mig", "short"}
        assert {r["name"]: r["monthly_money_at_stake"] for r in rows}["ml"] == "13140.00"


def test_viewer_sees_every_namespace_but_no_money(users, priced):
    rows = client_for(users["viewer"]).get(URL, {"window_days": 2}).json()["results"]
    assert len(rows) == 6
    assert all(r["monthly_money_at_stake"] is None and r["currency"] is None for r in rows)


def test_a_user_without_a_role_sees_nothing(users):
    assert client_for(users["nobody"]).get(URL).json()["results"] == []


def test_money_is_unpriced_without_a_rate_card(users, monkeypatch):
    monkeypatch.setattr(advice, "rate_for", None)
    rows = client_for(users["admin"]).get(URL, {"window_days": 2}).json()["results"]
    assert all(r["monthly_money_at_stake"] is None for r in rows)


def test_csv_has_the_same_rows(users, priced):
    r = client_for(users["admin"]).get(URL, {"window_days": 2, "format": "csv"})
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    lines = list(csv.reader(io.StringIO(r.content.decode())))
    assert lines[0] == CSV_COLUMNS
    by_name = {line[2]: dict(zip(CSV_COLUMNS, line)) for line in lines[1:]}
    assert set(by_name) == {"ml", "infer", "scratch", "empty", "mig", "short"}
    assert by_name["ml"]["target"] == "7" and by_name["ml"]["monthly_money_at_stake"] == "13140.00"
    assert yaml.safe_load(by_name["ml"]["yaml"])["kind"] == "ResourceQuota"


def test_bad_parameters(users):
    c = client_for(users["admin"])
    assert c.get(URL, {"cluster": "nope"}).status_code == 404
    assert c.get(URL, {"window_days": "x"}).status_code == 400


def test_advice_page_for_a_team_lead(users, priced, client):
    client.force_login(users["team_lead"])
    r = client.get("/advice/")
    assert r.status_code == 200
    assert [row["name"] for row in r.context["rows"]] == ["ml"]
    html = r.content.decode()
    assert "gpu-quota" in html and "frees €13,140.00" in html and 'extends' not in html
    client.force_login(users["viewer"])
    r = client.get("/advice/")
    assert len(r.context["rows"]) == 6 and "13140.00" not in r.content.decode()


def test_advice_page_needs_a_login(client, db):
    r = client.get("/advice/")
    assert r.status_code == 302 and "/accounts/login/" in r["Location"]


def test_advice_page_query_count_is_bounded(users, priced, client, django_assert_max_num_queries):
    client.force_login(users["admin"])
    # the first view computes and stores the window's histories, models and workloads
    # (docs/performance.md, "Right-sizing and quota advice"; the workloads' statement runs with
    # JIT off, one SET LOCAL more); the next reads them back
    with django_assert_max_num_queries(46):
        assert client.get("/advice/").status_code == 200
    with django_assert_max_num_queries(25):
        assert client.get("/advice/").status_code == 200


def test_beat_runs_the_snapshot_daily_and_the_alert_checks():
    from gpuportal.celery import app

    app.finalize()
    tasks = {entry["task"] for entry in app.conf.beat_schedule.values()}
    assert {"apps.recommendations.tasks.snapshot_recommendations", "apps.recommendations.tasks.check_alerts"} <= tasks


def test_snapshot_task_runs(users, priced):
    from apps.recommendations.models import RecommendationSnapshot
    from apps.recommendations.tasks import snapshot_recommendations

    snapshot_recommendations.delay()
    assert RecommendationSnapshot.objects.filter(name="ml", target=7).exists()


def test_a_team_picked_answers_that_team_or_403(users, priced):
    # Before: ?team= was ignored, so a lead asking for another team got 200 with their own rows.
    lead = client_for(users["team_lead"])
    assert lead.get(URL, {"cluster": "prod", "window_days": 2, "team": "search"}).status_code == 403
    assert lead.get(URL, {"cluster": "prod", "window_days": 2, "team": "nosuch"}).status_code == 403
    own = lead.get(URL, {"cluster": "prod", "window_days": 2, "team": "vision"})
    assert [r["name"] for r in own.json()["results"]] == ["ml"]
    admin = client_for(users["admin"]).get(URL, {"cluster": "prod", "window_days": 2, "team": "vision"})
    assert [r["name"] for r in admin.json()["results"]] == ["ml"]
