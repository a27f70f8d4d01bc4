"""Who sees what, page by page, with Django's test client (the browser tests repeat the essentials)."""
import pytest
from django.contrib.auth.models import Group

from apps.teams.access import ROLES
from tests.support.bodies import body_of

PAGES = ["/", "/teams/vision/", "/explore/", "/idle/", "/health/"]


def test_migration_creates_the_four_role_groups(db):
    assert set(Group.objects.filter(name__in=ROLES).values_list("name", flat=True)) == set(ROLES)


@pytest.mark.parametrize("url", PAGES + ["/admin-tools/ingest/", "/explore/?format=csv"])
def test_anonymous_is_sent_to_sign_in(client, seeded, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_anonymous_api_is_refused(client, seeded):
    assert client.get("/api/v1/idle/").status_code in (401, 403)


@pytest.mark.parametrize("role", ["admin", "finance", "team_lead", "viewer"])
@pytest.mark.parametrize("url", PAGES)
def test_every_role_opens_every_page_in_its_scope(login, role, url):
    assert login(role).get(url).status_code == 200


@pytest.mark.parametrize("url", [
    "/teams/nlp/", "/teams/unassigned/",
])
def test_team_lead_gets_403_for_another_teams_dashboard(login, url):
    assert login("team_lead").get(url).status_code == 403


@pytest.mark.parametrize("url", [
    "/?team=nlp", "/explore/?team=nlp", "/explore/?team=nlp&format=csv", "/idle/?team=nlp", "/health/?team=nlp",
    "/api/v1/idle/?team=nlp", "/api/v1/idle/?team=nlp&format=csv",
])
def test_team_lead_gets_403_when_asking_for_another_team(login, url):
    assert login("team_lead").get(url).status_code == 403


def test_team_lead_sees_only_their_namespaces_everywhere(login):
    c = login("team_lead")
    for url in ["/", "/explore/", "/idle/", "/health/", "/explore/?format=csv", "/api/v1/idle/?format=csv"]:
        body = body_of(c.get(url)).decode()
        assert "nlp-dev" not in body and "notebook-0" not in body, url
    assert "cv-train" in c.get("/explore/").content.decode()
    body = c.get("/explore/?namespace=nlp-dev").content.decode()
    assert "No usage matches these filters" in body and "notebook-0" not in body


def test_team_lead_does_not_see_fleet_capacity(login):
    body = login("team_lead").get("/").content.decode()
    assert "Capacity" not in body and "Fleet by GPU model" not in body
    assert 'id="unallocated"' not in login("team_lead").get("/idle/").content.decode()


@pytest.mark.parametrize("role", ["finance", "team_lead", "viewer"])
def test_ingest_log_is_for_admins_only(login, role):
    assert login(role).get("/admin-tools/ingest/").status_code == 403


def test_admin_reads_the_ingest_log_with_errors_and_warnings(login):
    body = login("admin").get("/admin-tools/ingest/").content.decode()
    assert "connection refused" in body and "gap in DCGM series" in body
    body = login("admin").get("/admin-tools/ingest/?cluster=alpha").content.decode()
    assert "connection refused" not in body


def test_viewer_sees_no_money_and_no_chargeback_link(login):
    body = login("viewer").get("/teams/vision/").content.decode()
    # no cost panel at all (it used to stand empty, saying money is not shown)
    assert "Cost: this month" not in body and 'id="costs"' not in body and 'id="forecast"' not in body
    assert 'href="/chargeback/"' not in body


@pytest.mark.parametrize("role", ["admin", "finance", "team_lead"])
def test_money_roles_see_cost_block_and_chargeback_link(login, role):
    body = login(role).get("/teams/vision/").content.decode()
    assert 'id="costs"' in body and 'href="/chargeback/"' in body


def test_unknown_cluster_is_404_and_bad_dates_are_400(login):
    c = login("admin")
    assert c.get("/?cluster=nope").status_code == 404
    response = c.get("/explore/?start=yesterday")
    assert response.status_code == 400 and "start" in response.content.decode()
    assert c.get("/explore/?grain=fortnight").status_code == 400
    assert c.get("/idle/?max_utilization=2").status_code == 400
    assert c.get("/api/v1/idle/?min_idle_minutes=x").status_code == 400


def test_navigation_is_the_same_on_pages_that_do_not_parse_the_picker(seeded, rf):
    """Chargeback and advice pages extend base.html without a `sel`: the nav still follows the role."""
    from django.template.loader import render_to_string

    def nav_for(name, url="/chargeback/?team=x&start=2026-11-01"):
        request = rf.get(url)
        request.user = seeded["users"][name]
        return render_to_string("base.html", {}, request=request)

    lead = nav_for("team_lead")
    assert 'href="/teams/vision/?team=x&amp;start=2026-11-01"' in lead
    assert 'href="/chargeback/" class="current"' in lead and "Ingest log" not in lead
    viewer = nav_for("viewer")
    assert "/chargeback/" not in viewer and 'href="/advice/"' in viewer
    assert 'href="/admin-tools/ingest/' in nav_for("admin")
