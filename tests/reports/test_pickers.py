"""The bar offers only what the page follows (#26): the team page shows its own team as
picked, and picking another opens that team's page; the ingest log offers its cluster (and
status) only, team claims no bar at all.

Before: /teams/research/ said "Team: all teams"; the claims and ingest-log pages offered date
and team pickers that filtered nothing; the viewer's team page kept an empty cost panel
(tests/reports/test_page_access.py)."""
import re


def picker_of(body):
    m = re.search(r'<form method="get" class="picker".*?</form>', body, re.S)
    return m.group(0) if m else None


def test_the_team_page_shows_its_team_as_picked(login):
    client = login("admin")
    bar = picker_of(client.get("/teams/nlp/").content.decode())
    assert re.search(r'<option value="nlp" selected>nlp</option>', bar)
    assert not re.search(r'<option value=""[^>]*selected', bar)
    response = client.get("/teams/nlp/?team=vision&start=2026-11-01&end=2026-11-08")
    assert response.status_code == 302 and response["Location"] == "/teams/vision/?start=2026-11-01&end=2026-11-08"


def test_a_lead_picking_another_team_on_a_team_page_is_refused(login):
    assert login("team_lead").get("/teams/vision/?team=nlp").status_code == 403


def test_pages_offer_only_the_pickers_they_follow(login):
    client = login("admin")
    log = picker_of(client.get("/admin-tools/ingest/").content.decode())
    assert 'name="cluster"' in log and 'name="status"' in log
    assert 'name="team"' not in log and 'name="start"' not in log and "Window shown" not in log
    assert picker_of(client.get("/admin-tools/claims/").content.decode()) is None
    overview = picker_of(client.get("/").content.decode())
    assert all(f'name="{n}"' in overview for n in ("cluster", "team", "start", "end"))
