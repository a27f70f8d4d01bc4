"""Stored month bodies for every scope, and their gzip copies (docs/performance.md, "Stored month
answers"): a team lead's month is stored per set of teams and never shows another team; a
client that accepts gzip gets the stored compressed copy of exactly the same bytes.
"""
import gzip
import json

import pytest

from apps.accounting.stored.responses import scope_tag
from apps.accounting.models import MonthBody

from tests.support.factories import make_team, make_usage, make_user, two_teams_in_march, utc

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]   # stored answers: Postgres triggers log the inputs
CHARGEBACK = "/api/v1/chargeback/"
USAGE = "/api/v1/usage/"
MARCH = {"start": "2026-03-01", "end": "2026-04-01"}


@pytest.fixture
def march():
    """Team A's namespace ml: 3 H100 hours on 1 March; team B's cv: 1 hour. 2.00 per GPU-hour."""
    return two_teams_in_march()


def lead_of(*teams, name=None):
    user = make_user(name or "lead-" + "-".join(teams), "team_lead")
    for t in teams:
        make_team(t, lead=user)
    return user


def keys(rows):
    return [(r["key"], r["allocated_gpu_hours"], r.get("cost")) for r in rows]


def test_a_team_leads_statement_is_stored_for_their_teams_and_shows_only_them(march, api, finance):
    lead_a = lead_of("A")
    first = api(lead_a).get(CHARGEBACK, {"period": "2026-03", "group_by": "team"})
    assert keys(first.json()["results"]) == [("A", 3.0, "6.00")]
    stored = MonthBody.objects.get(period="2026-03",
                                   key=f"chargeback?group_by=team&shared_idle=apart&scope={scope_tag({'A'})}")
    again = api(lead_a).get(CHARGEBACK, {"period": "2026-03", "group_by": "team"})
    assert again.content == first.content == bytes(stored.body)
    # finance asking for team A gets that same stored answer; the whole fleet's is another body
    assert api(finance).get(CHARGEBACK, {"period": "2026-03", "team": "A"}).content == first.content
    assert keys(api(finance).get(CHARGEBACK, {"period": "2026-03"}).json()["results"]) == [
        ("A", 3.0, "6.00"), ("B", 1.0, "2.00")]
    # B's lead has B's body, never A's; A's lead asking for B is refused before anything is read
    lead_b = lead_of("B")
    assert keys(api(lead_b).get(CHARGEBACK, {"period": "2026-03"}).json()["results"]) == [("B", 1.0, "2.00")]
    assert api(lead_a).get(CHARGEBACK, {"period": "2026-03", "team": "B"}).status_code == 403
    assert MonthBody.objects.filter(period="2026-03").count() == 3   # A, the fleet, B


def test_a_lead_of_two_teams_has_one_body_for_the_pair(march, api):
    both = lead_of("A", "B")
    rows = api(both).get(USAGE, {**MARCH, "group_by": "namespace"}).json()["results"]
    assert [(r["key"], r["allocated_gpu_hours"]) for r in rows] == [("ml", 3.0), ("cv", 1.0)]
    assert scope_tag({"B", "A"}) == scope_tag(["A", "B"]) != scope_tag({"A"}) != scope_tag(None) == "all"
    assert MonthBody.objects.filter(key__endswith=scope_tag({"A", "B"})).count() == 1


def test_a_change_reaches_a_leads_stored_month_at_once(march, api):
    lead_a = lead_of("A")
    assert keys(api(lead_a).get(USAGE, {**MARCH, "group_by": "team"}).json()["results"]) == [("A", 3.0, "6.00")]
    make_usage(march["gpu"], "ml", utc(2026, 3, 20, 5), hours=2, pod="late")
    assert keys(api(lead_a).get(USAGE, {**MARCH, "group_by": "team"}).json()["results"]) == [("A", 5.0, "10.00")]
    make_usage(march["other"], "cv", utc(2026, 3, 21), hours=4, pod="other-team")   # B's hours: A's answer unchanged
    assert keys(api(lead_a).get(USAGE, {**MARCH, "group_by": "team"}).json()["results"]) == [("A", 5.0, "10.00")]


@pytest.mark.parametrize("url, params", [(CHARGEBACK, {"period": "2026-03", "group_by": "namespace"}),
                                         (USAGE, {**MARCH, "group_by": "team"})])
def test_a_client_accepting_gzip_gets_the_stored_compressed_copy(march, api, finance, url, params):
    plain = api(finance).get(url, params)
    assert "Content-Encoding" not in plain and "Accept-Encoding" in plain["Vary"]
    packed = api(finance).get(url, params, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert packed["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed["Vary"]
    assert gzip.decompress(packed.content) == plain.content
    body = MonthBody.objects.get(period="2026-03", key__startswith=url.strip("/").split("/")[-1])
    assert bytes(body.gzipped) == packed.content      # compressed once, when stored
    # the first read of a client accepting gzip stores and sends the compressed copy too
    MonthBody.objects.all().delete()
    first = api(finance).get(url, params, HTTP_ACCEPT_ENCODING="gzip")
    assert first["Content-Encoding"] == "gzip" and gzip.decompress(first.content) == plain.content


def test_gzip_refused_or_indented_json_gets_plain_bytes(march, api, finance):
    params = {"period": "2026-03", "group_by": "team"}
    refused = api(finance).get(CHARGEBACK, params, HTTP_ACCEPT_ENCODING="gzip;q=0, identity")
    assert "Content-Encoding" not in refused
    assert keys(refused.json()["results"]) == [("A", 3.0, "6.00"), ("B", 1.0, "2.00")]
    indented = api(finance).get(CHARGEBACK, params, HTTP_ACCEPT_ENCODING="gzip",
                                HTTP_ACCEPT="application/json; indent=2")
    assert "Content-Encoding" not in indented
    assert indented.content.startswith(b'{\n  "') and json.loads(indented.content) == refused.json()
