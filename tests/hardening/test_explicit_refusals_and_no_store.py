"""A lead asking for another team gets an explicit 403 (never an empty 200), a team whose name
holds `/` or spaces has a working page, and money never sits in a shared cache."""
import pytest
from django.urls import reverse

from apps.teams.models import Team

OTHER_TEAM_ROADS = [
    "/chargeback/?period={p}&team={t}",
    "/teams/{t}/",
    "/api/v1/usage/?group_by=namespace&team={t}",
    "/api/v1/chargeback/?period={p}&group_by=team&team={t}",
    "/api/v1/idle/?team={t}",
    "/?team={t}",
]


@pytest.mark.parametrize("road", OTHER_TEAM_ROADS)
@pytest.mark.parametrize("team", ["zebra", "no-such-team"])
def test_a_lead_asking_for_another_team_is_refused(as_role, world, road, team):
    response = as_role("team_lead").get(road.format(p=world.open_period, t=team))
    assert response.status_code == 403, (road, response.status_code)
    assert b"not one of yours" in response.content


def test_a_lead_asking_for_their_own_team_gets_it(as_role, world):
    c = as_role("team_lead")
    team = world.names.team_a
    rows = c.get(f"/api/v1/usage/?group_by=team&team={team}").json()["results"]
    assert [r["key"] for r in rows] == [team] and rows[0]["allocated_gpu_hours"] == pytest.approx(6.0)
    body = c.get(f"/api/v1/chargeback/?period={world.open_period}&group_by=team&team={team}").json()
    assert [r["key"] for r in body["results"]] == [team]


def test_the_team_filter_narrows_for_finance(as_role, world):
    c = as_role("finance")
    rows = c.get(f"/api/v1/usage/?group_by=team&team={world.names.team_b}").json()["results"]
    assert [r["key"] for r in rows] == [world.names.team_b]


@pytest.mark.parametrize("name", ["ML / Vision", "data science", "r&d?x=1#top"])
def test_a_team_name_with_slashes_or_spaces_has_a_page(as_role, world, name):
    Team.objects.create(name=name)
    url = reverse("reports:team", args=[name])
    assert url.startswith("/teams/") and " " not in url and "#" not in url and "?" not in url
    response = as_role("admin").get(url)
    assert response.status_code == 200, url
    assert response.context["team"] == name


MONEY_URLS = [
    "/chargeback/?period={p}",
    "/api/v1/chargeback/?period={p}&format=csv",
    "/api/v1/chargeback/?period={p}&group_by=namespace&format=xlsx",
    "/api/v1/chargeback/?period={p}",
    "/api/v1/usage/?group_by=team&format=csv",
    "/explore/?format=csv",
    "/",
]


@pytest.mark.parametrize("url", MONEY_URLS)
def test_money_is_never_stored_by_a_cache(as_role, world, url):
    response = as_role("finance").get(url.format(p=world.open_period))
    assert response.status_code == 200, url
    directives = {d.strip() for d in response["Cache-Control"].split(",")}
    assert {"no-store", "private"} <= directives, (url, response["Cache-Control"])

