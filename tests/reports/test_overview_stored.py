"""The overview of a whole billing month for the whole fleet is a stored month answer: the
second view reads it back without touching usage, and any change of its inputs shows on the
next view (docs/performance.md, "Stored month answers"). Leads' views and other windows are
computed as before.

March 2026, UTC billing: team A's namespace ml held one H100 for 3 hours on 1 March, team B's
cv one hour; 2.00 USD per GPU-hour. A's cost 6.00, B's 2.00, the month 8.00.
"""
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounting.actions.rates import do_save_rate
from apps.accounting.models import MonthBody, Rate
from apps.reports.data.overview_store import KEY

from tests.support.factories import make_usage, two_teams_in_march, utc

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]   # stored answers: Postgres triggers log the inputs
MARCH = "/?start=2026-03-01&end=2026-04-01"


@pytest.fixture
def march():
    return two_teams_in_march()["gpu"]


def team_costs(body: str) -> dict:
    """Team → (allocated GPU-hours, cost) from the overview's team table."""
    table = re.search(r'<table[^>]*id="teams".*?</table>', body, re.S).group(0)
    out = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S):
        cells = [re.sub(r"<[^>]+>", "", td).strip() for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        out[cells[0]] = (cells[1], cells[2])
    return out


def view(client):
    response = client.get(MARCH)
    assert response.status_code == 200
    return response.content.decode()


def test_second_view_reads_the_stored_figures(march, finance, client):
    client.force_login(finance)
    first = view(client)
    assert team_costs(first) == {"A": ("3.00", "$6.00"), "B": ("1.00", "$2.00")}
    assert MonthBody.objects.filter(period="2026-03", key=f"{KEY}?money=1&fleet=1").exists()
    with CaptureQueriesContext(connection) as queries:
        second = view(client)
    assert team_costs(second) == team_costs(first)
    assert not [q for q in queries if "usageday" in q["sql"] or "usagehour" in q["sql"]]


def test_an_ingested_hour_and_a_rate_edit_show_on_the_next_view(march, finance, client):
    client.force_login(finance)
    view(client)
    make_usage(march, "ml", utc(2026, 3, 20, 5), hours=1)          # late data for A
    assert team_costs(view(client))["A"] == ("4.00", "$8.00")
    rate = Rate.objects.get()
    rate.hourly_rate = "3.00"
    do_save_rate(None, rate)
    assert team_costs(view(client)) == {"A": ("4.00", "$12.00"), "B": ("1.00", "$3.00")}


def test_a_viewer_gets_its_own_stored_figures_without_money(march, finance, viewer, client):
    client.force_login(finance)
    view(client)
    client.force_login(viewer)
    body = view(client)
    assert "$6.00" not in body
    assert MonthBody.objects.filter(period="2026-03", key=f"{KEY}?money=0&fleet=1").exists()


def test_other_windows_are_not_stored(march, finance, client):
    client.force_login(finance)
    assert client.get("/?start=2026-03-01&end=2026-03-15").status_code == 200
    assert not MonthBody.objects.filter(key__startswith=KEY).exists()


def test_the_figures_are_stored_as_html_and_follow_the_links_query_and_the_money_locale(march, finance, client,
                                                                                     settings):
    client.force_login(finance)
    first = view(client)
    [html_key] = MonthBody.objects.filter(period="2026-03", key__startswith=f"{KEY}-html?money=1&fleet=1")\
        .values_list("key", flat=True)
    stored = bytes(MonthBody.objects.get(key=html_key).body).decode()
    assert stored in first and 'href="/teams/A/?start=2026-03-01&amp;end=2026-04-01"' in stored
    with CaptureQueriesContext(connection) as queries:
        second = view(client)
    assert stored in second        # the page around it is rendered per request (its CSRF token)
    assert not [q for q in queries if "usageday" in q["sql"] or "usagehour" in q["sql"]]
    # the same month asked with another parameter: its links keep that parameter
    other = client.get(MARCH + "&cluster=").content.decode()
    assert team_costs(other) == team_costs(first)
    # another money locale is another stored fragment, formatted in it
    settings.MONEY_LOCALE = "de_DE"
    assert team_costs(view(client)) == {"A": ("3.00", "6,00\xa0$"), "B": ("1.00", "2,00\xa0$")}
