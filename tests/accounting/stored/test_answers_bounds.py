"""Plain GETs cannot fill the database (docs/security.md, "Stored answers"): a stored month answer
is keyed by the request's parsed and normalised values, so respelling a month stores nothing new;
an unknown team is a 404 and stores nothing; a month keeps at most MONTH_BODIES_PER_PERIOD bodies
and MONTH_BODY_MB_PER_PERIOD megabytes of them, and the nightly housekeeping drops those nobody
asked for lately.

March 2026, UTC billing: team A's namespace ml 3 H100 hours, team B's cv 1 hour, 2.00 per GPU-hour.
"""
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.accounting.stored.responses import prune_bodies
from apps.accounting.models import MonthBody
from apps.accounting.tasks import compact_input_changes

from tests.support.factories import make_team, make_user, two_teams_in_march

pytestmark = pytest.mark.django_db
USAGE = "/api/v1/usage/"
CHARGEBACK = "/api/v1/chargeback/"

# 6 spellings of 1 March 00:00 and 4 of 1 April 00:00 (UTC billing): 24 URLs, one month.
STARTS = ["2026-03-01", "2026-03-01T00:00", "2026-03-01T00:00:00", "2026-03-01T00:00:00Z",
          "2026-03-01T00:00:00+00:00", "2026-03-01T01:00:00+01:00"]
ENDS = ["2026-04-01", "2026-04-01T00:00", "2026-04-01T00:00:00Z", "2026-03-31T20:00:00-04:00"]


@pytest.fixture
def march():
    return two_teams_in_march()


def bodies():
    return MonthBody.objects.filter(period="2026-03").count()


def test_24_spellings_of_one_month_on_the_overview_store_one_answer(march, finance, client):
    client.force_login(finance)
    pages = []
    for start in STARTS:
        for end in ENDS:
            response = client.get("/", {"start": start, "end": end})
            assert response.status_code == 200, (start, end)
            pages.append(response.content.decode())
    # the figures and their HTML: one body each, whatever the spelling
    assert bodies() == 2
    # the stored links carry the one canonical spelling
    assert 'href="/teams/A/?start=2026-03-01&amp;end=2026-04-01"' in pages[-1]
    # the same 24 spellings on the usage API: one body per group_by
    for start in STARTS:
        for end in ENDS:
            assert client.get(USAGE, {"start": start, "end": end, "group_by": "team"}).status_code == 200
    assert bodies() == 3


@pytest.mark.parametrize("role", ["finance", "admin", "viewer"])
def test_unknown_teams_are_404_and_store_nothing(march, api, role):
    user = make_user(role, role)
    client = api(user)
    client.force_login(user)      # the pages too
    assert client.get(USAGE, {"start": "2026-03-01", "end": "2026-04-01", "group_by": "team", "team": "A"}
                      ).status_code == 200
    before = bodies()
    for i in range(20):
        response = client.get(USAGE, {"start": "2026-03-01", "end": "2026-04-01", "group_by": "team",
                                      "team": f"nosuch-{i}"})
        assert response.status_code == 404 and response.json()["detail"] == f"no team named 'nosuch-{i}'"
    if role != "viewer":
        for url in (CHARGEBACK, CHARGEBACK + "focus/"):
            assert client.get(url, {"period": "2026-03", "team": "nosuch"}).status_code == 404
        assert client.get("/chargeback/", {"period": "2026-03", "team": "nosuch"}).status_code == 404
    assert client.get("/", {"start": "2026-03-01", "end": "2026-04-01", "team": "nosuch"}).status_code == 404
    assert bodies() == before


def test_a_lead_asking_for_an_unknown_team_learns_nothing_and_stores_nothing(march, api):
    lead = make_user("lead", "team_lead")
    make_team("A", lead=lead)
    client = api(lead)
    for team in ("B", "nosuch"):     # another's and a made-up name: the same 403
        response = client.get(USAGE, {"start": "2026-03-01", "end": "2026-04-01", "team": team})
        assert response.status_code == 403 and response.json()["detail"] == f"team {team!r} is not one of yours"
    assert bodies() == 0


def test_a_month_keeps_at_most_its_limit_of_bodies_the_newest(march, api, finance, settings):
    settings.MONTH_BODIES_PER_PERIOD = 3
    client = api(finance)
    for group_by in ("team", "namespace", "cluster", "gpu_model"):
        assert client.get(USAGE, {"start": "2026-03-01", "end": "2026-04-01", "group_by": group_by}
                          ).status_code == 200
    assert client.get(CHARGEBACK, {"period": "2026-03"}).status_code == 200
    keys = set(MonthBody.objects.filter(period="2026-03").values_list("key", flat=True))
    assert len(keys) == 3
    assert "chargeback?group_by=team&shared_idle=apart&scope=all" in keys
    assert not any("group_by=team&" in k and k.startswith("usage") for k in keys)   # the oldest went


def test_nightly_housekeeping_drops_bodies_nobody_asked_for(march, api, finance):
    client = api(finance)
    client.get(USAGE, {"start": "2026-03-01", "end": "2026-04-01", "group_by": "team"})
    client.get(CHARGEBACK, {"period": "2026-03"})
    MonthBody.objects.filter(key__startswith="usage").update(rendered_at=timezone.now() - timedelta(days=40))
    assert compact_input_changes()["bodies_pruned"] == 1
    assert list(MonthBody.objects.values_list("key", flat=True)) == ["chargeback?group_by=team&shared_idle=apart&scope=all"]
    assert prune_bodies(keep_days=0) == 1 and bodies() == 0


@pytest.mark.postgres   # the bound is kept by SQL over the stored rows
def test_a_month_keeps_at_most_its_bytes_of_bodies_the_newest(march, settings):
    """1 MB a month: three bodies of 400 KB (plain, no gzip copy) stored one after another keep
    the last two (800 KB); the third's is kept with the second's, the first goes. One body larger
    than the whole budget is still kept, alone: the one just stored always stays."""
    from apps.accounting.stored.responses import body

    settings.MONTH_BODY_MB_PER_PERIOD = 1
    for name in ("first", "second", "third"):
        body("2026-03", name, "v1", lambda: b"x" * 400 * 1024)
    assert set(MonthBody.objects.filter(period="2026-03").values_list("key", flat=True)) == {"second", "third"}
    body("2026-03", "huge", "v1", lambda: b"y" * 3 * 2**20)
    assert list(MonthBody.objects.filter(period="2026-03").values_list("key", flat=True)) == ["huge"]


def months(first: str, last: str):
    from apps.accounting.core.periods import next_period
    period = first
    while period <= last:
        yield period
        period = next_period(period)


def stored_periods():
    from apps.accounting.models import MonthAnswer
    return (set(MonthBody.objects.values_list("period", flat=True))
            | set(MonthAnswer.objects.values_list("period", flat=True)))


def test_only_months_of_the_fleets_history_are_stored(march, api, finance):
    """A month before the first ingested hour (March 2026 here) or after the current month is
    answered, correctly, and stores nothing: before, 96 usage calls over 24 empty months grew
    the stored bodies from 28 to 124, and 48 chargeback/XLSX/FOCUS GETs for 2098 added 389
    answer rows (issue 42). A sweep of every month from November 2025 to February 2027, every grouping and both
    teams stores only months from March 2026 through this month."""
    from apps.accounting.core.periods import next_period, period_of
    lead = make_user("lead", "team_lead")
    make_team("A", lead=lead)
    this_month = period_of(timezone.now().date())
    for user in (finance, lead):
        client = api(user)
        for period in months("2025-11", "2027-02"):
            start, end = f"{period}-01", f"{next_period(period)}-01"
            for group_by in ("team", "namespace", "cluster", "gpu_model"):
                response = client.get(USAGE, {"start": start, "end": end, "group_by": group_by})
                assert response.status_code == 200, (period, group_by)
                if period == "2026-03" and group_by == "team":
                    assert {r["key"]: r["allocated_gpu_hours"] for r in response.json()["results"]} == \
                        ({"A": 3.0, "B": 1.0} if user is finance else {"A": 3.0})
                elif not "2026-03" <= period <= this_month:
                    assert response.json()["results"] == [], (period, group_by)
        for period in ("2026-02", next_period(this_month), "2098-01"):
            for team in ("A", None) if user is lead else ("A", "B", None):
                params = {"period": period, **({"team": team} if team else {})}
                for url in (CHARGEBACK, CHARGEBACK + "xlsx/", CHARGEBACK + "focus/"):
                    assert client.get(url, params).status_code == 200, (url, params)
    stored = stored_periods()
    assert "2026-03" in stored
    assert stored <= set(months("2026-03", this_month)), sorted(stored)
