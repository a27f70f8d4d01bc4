"""Windows across a close (docs/chargeback.md, "Windows across a close"; issue 39): every view that
shows money reads a window as billed — a closed month's days as its close froze them (its teams,
its hours, its closing rate card), open days live — and says how many hours arrived after the
close and where they were billed.

October: research's namespace `ml` held one H100 at 2.00 USD for 10 h on 10 October; closed at
10 × 2.00 = 20.00. Then 2 h of 27 October arrive late: they are billed in November (2 × 2.00 =
4.00, pending on its open statement).
"""
import html
import re
from datetime import date
from decimal import Decimal

import pytest

from apps.accounting.actions.periods import do_close_period
from apps.accounting.actions.rates import do_save_rate
from apps.accounting.models import Rate

from tests.support.factories import H100, label_namespace, make_cluster, make_device, make_namespace, make_rate, \
    make_team, make_usage, utc

pytestmark = pytest.mark.django_db
OCTOBER = {"start": "2026-10-01", "end": "2026-11-01"}
NOTE = "2.0 GPU-h arrived after the close, billed in 2026-11 (on its open statement, until it closes)"


def text_of(response) -> str:
    """The page as read: tags dropped, entities and spaces plain."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", response.content.decode())))


@pytest.fixture
def late_october(finance):
    prod = make_cluster()
    make_team("research")
    make_namespace(prod, "ml", label_team="research")
    make_rate(hourly_rate="2.00")
    gpu = make_device(prod, host="n1")
    make_usage(gpu, "ml", utc(2026, 10, 10), hours=10)
    do_close_period("2026-10", actor=finance)
    make_usage(gpu, "ml", utc(2026, 10, 27), hours=2, pod="late")
    return gpu


def test_the_overview_of_a_closed_month_shows_the_hours_its_money_priced(late_october, finance, client):
    """10 h beside 20.00 (not the live 12 h), the 27th billed nothing here, and the note."""
    client.force_login(finance)
    response = client.get("/", OCTOBER)
    page = html.unescape(response.content.decode())
    kpis = dict(re.findall(r'<span class="label">(\w+)</span><span class="value"[^>]*>([^<]*)<', page))
    assert (kpis["Allocated"], kpis["Used"], kpis["Cost"]) == ("10.0", "5.0", "$20.00")
    teams = re.findall(r'<tr><td><a href="/teams/(\w+)/[^"]*">\1</a></td><td class="num">([^<]*)</td>'
                       r'<td class="num">([^<]*)</td>', page)
    assert teams == [("research", "10.00", "$20.00")]
    days = page[page.index('id="daily"'):]
    days = re.findall(r"<tr><td>(2026-10-\d\d)</td><td class=\"num\">[^<]*</td><td class=\"num\">([^<]*)</td>"
                      r"<td class=\"num\">([^<]*)</td>", days[:days.index("</table>")])
    assert days == [("2026-10-10", "10.00", "$20.00")]          # no 27th: its hours are November's bill
    assert f"2026-10 is closed: {NOTE}" in text_of(response)
    assert 'href="/chargeback/?period=2026-11"' in page


def test_the_team_page_of_a_closed_month_shows_the_hours_its_money_priced(late_october, finance, client):
    client.force_login(finance)
    response = client.get("/teams/research/", OCTOBER)
    page = html.unescape(response.content.decode())
    table = page[page.index('id="namespaces"'):]
    rows = re.findall(r'<tr><td>([\w-]+)</td><td class="num">([^<]*)</td><td class="num">([^<]*)</td>',
                      table[:table.index("</table>")])
    assert rows == [("ml", "10.00", "$20.00")]                  # not 12.00 h beside $20.00
    assert f"2026-10 is closed: {NOTE}" in text_of(response)
    assert 'href="/chargeback/?period=2026-11&amp;team=research"' in response.content.decode()


def test_the_usage_api_agrees(late_october, finance, api):
    body = api(finance).get("/api/v1/usage/", {**OCTOBER, "group_by": "team"}).json()
    assert [(r["key"], r["allocated_gpu_hours"], r["used_gpu_hours"], r["cost"]) for r in body["results"]] == \
        [("research", 10.0, 5.0, "20.00")]


def test_without_money_the_hours_are_live(late_october, viewer, client):
    """A viewer sees no money, so nothing is beside the hours: the live 12 h, and no note."""
    client.force_login(viewer)
    response = client.get("/", OCTOBER)
    kpis = dict(re.findall(r'<span class="label">(\w+)</span><span class="value"[^>]*>([^<]*)<',
                           html.unescape(response.content.decode())))
    assert kpis["Allocated"] == "12.0"
    assert "arrived after the close" not in text_of(response)


# ---------------------------------------------------------------- a window across the close

WINDOW = {"start": "2026-10-29", "end": "2026-11-03"}        # 29 October – 2 November


@pytest.fixture
def across(finance, admin_user):
    """research's `ml` held one H100 all of 30 October and all of 1 November (24 h each), at 2.00
    USD from 1 January. October is closed (30 Oct: 24 × 2.00 = 48.00). After the close a 9.00
    rate is backdated to 15 October and `ml`'s label history says nlp for all of October and
    November: live, 30 October would cost 216.00 and be nlp's."""
    prod = make_cluster()
    make_team("research"), make_team("nlp")
    ml = make_namespace(prod, "ml", label_team="research")
    make_rate(hourly_rate="2.00")
    gpu = make_device(prod, host="n1")
    make_usage(gpu, "ml", utc(2026, 10, 30), hours=24)
    make_usage(gpu, "ml", utc(2026, 11, 1), hours=24, pod="pod-1")
    do_close_period("2026-10", actor=finance)
    do_save_rate(admin_user, Rate(gpu_model=H100, mig_profile="", price_class="on_demand",
                                  hourly_rate=Decimal("9.00"), currency="USD", effective_from=date(2026, 10, 15)))
    label_namespace(ml, "nlp", since=utc(2026, 10, 1))
    return prod


def test_a_window_across_the_close_prices_octobers_days_as_billed(across, finance, client, api):
    """29 Oct – 2 Nov: October's day as the close billed it, research 24 h × 2.00 = 48.00; November's
    live, nlp 24 h × 9.00 = 216.00; 264.00 in all (before: 24 × 9.00 twice, 432.00, all nlp's)."""
    client.force_login(finance)
    page = html.unescape(client.get("/", WINDOW).content.decode())
    assert re.search(r'id="kpi-cost">\$264.00<', page)
    teams = dict(re.findall(r'<tr><td><a href="/teams/(\w+)/[^"]*">\1</a></td><td class="num">[^<]*</td>'
                            r'<td class="num">([^<]*)</td>', page))
    assert teams == {"research": "$48.00", "nlp": "$216.00"}

    body = api(finance).get("/api/v1/usage/", {**WINDOW, "group_by": "team"}).json()
    assert sorted((r["key"], r["allocated_gpu_hours"], r["cost"]) for r in body["results"]) == \
        [("nlp", 24.0, "216.00"), ("research", 24.0, "48.00")]

    import csv
    import io

    from tests.support.bodies import body_of
    rows = csv.DictReader(io.StringIO(body_of(client.get("/explore/", {**WINDOW, "format": "csv"})).decode()))
    assert [(r["period_start"], r["team"], r["allocated_gpu_hours"], r["cost"]) for r in rows] == \
        [("2026-10-30", "research", "24.0", "48.00"), ("2026-11-01", "nlp", "24.0", "216.00")]

    research = html.unescape(client.get("/teams/research/", WINDOW).content.decode())
    table = research[research.index('id="namespaces"'):]
    assert re.findall(r'<tr><td>(ml)</td><td class="num">([^<]*)</td><td class="num">([^<]*)</td>',
                      table[:table.index("</table>")]) == [("ml", "24.00", "$48.00")]


def test_part_of_a_closed_day_is_read_as_its_close_attributed_it(across, finance, api):
    """A window from 30 October 12:00 UTC to 1 November 12:00 UTC: the half day of October has no
    frozen figures, so its live 12 h are read as the close attributed them (research) at October's
    card, 12 × 2.00 = 24.00; November's 12 h are nlp's at 9.00, 108.00."""
    body = api(finance).get("/api/v1/usage/", {"start": "2026-10-30T12:00:00Z", "end": "2026-11-01T12:00:00Z",
                                               "group_by": "team"}).json()
    assert sorted((r["key"], r["allocated_gpu_hours"], r["cost"]) for r in body["results"]) == \
        [("nlp", 12.0, "108.00"), ("research", 12.0, "24.00")]
