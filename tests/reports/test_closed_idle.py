"""The idle hours of a closed month are frozen too (docs/chargeback.md, "Windows across a close";
issue 39, item 1): a closed day's idle GPU-hours and idle cost are what its close froze, whatever
arrives for that day later.

October: research's `ml` held one H100 at 2.00 USD for 10 h on 10 October, 3 of them idle: idle
3.0 GPU-h, idle cost 3 × 2.00 = 6.00; October was closed. Then 2 late hours of 10 October arrive,
both idle (20:00–22:00 UTC). Live, the day is now 12 h of which 5 idle; read as the idle share of
the day's live usage, the closed 10 h would show 10 × 5/12 = 4.17 idle GPU-h and 8.33 of idle
cost. As billed: still 3.0 and 6.00, and the note counts the 2 late hours.
"""
import csv
import html
import io
import re

import pytest

from apps.accounting.actions.periods import do_close_period

from tests.support.bodies import body_of
from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_team, \
    make_usage_hours, utc

pytestmark = pytest.mark.django_db
OCTOBER = {"start": "2026-10-01", "end": "2026-11-01"}
NOTE = "2026-10 is closed: 2.0 GPU-h arrived after the close, billed in 2026-11"


def text_of(response) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", response.content.decode())))


def hours(day, first, count):
    return [utc(2026, 10, day, first + i) for i in range(count)]


@pytest.fixture
def idle_october(finance):
    prod = make_cluster()
    make_team("research")
    make_namespace(prod, "ml", label_team="research")
    make_rate(hourly_rate="2.00")
    gpu = make_device(prod, host="n1")
    make_usage_hours(gpu, "ml", "pod-0", hours(10, 0, 3), gpus=1, efficiency=0.0, idle_gpu_seconds=3600.0)
    make_usage_hours(gpu, "ml", "pod-0", hours(10, 3, 7), gpus=1, efficiency=0.5)
    do_close_period("2026-10", actor=finance)
    make_usage_hours(gpu, "ml", "late", hours(10, 20, 2), gpus=1, efficiency=0.0, idle_gpu_seconds=3600.0)
    return gpu


def test_the_overview_of_a_closed_month_shows_its_frozen_idle(idle_october, finance, client):
    client.force_login(finance)
    response = client.get("/", OCTOBER)
    page = html.unescape(response.content.decode())
    kpis = dict(re.findall(r'<span class="label">([\w ]+)</span><span class="value"[^>]*>([^<]*)<', page))
    assert (kpis["Allocated"], kpis["Idle"], kpis["Cost"], kpis["Idle cost"]) == ("10.0", "3.0", "$20.00", "$6.00")
    teams = re.findall(r'<tr><td><a href="/teams/(\w+)/[^"]*">\1</a></td><td class="num">([^<]*)</td>'
                       r'<td class="num">([^<]*)</td><td class="num">[^<]*</td><td class="num">([^<]*)</td>'
                       r'<td class="num">([^<]*)</td>', page)
    assert teams == [("research", "10.00", "$20.00", "3.00", "$6.00")]
    assert NOTE in text_of(response)


def test_the_team_page_of_a_closed_month_shows_its_frozen_idle(idle_october, finance, client):
    client.force_login(finance)
    response = client.get("/teams/research/", OCTOBER)
    page = html.unescape(response.content.decode())
    table = page[page.index('id="namespaces"'):]
    rows = re.findall(r'<tr><td>(ml)</td><td class="num">([^<]*)</td><td class="num">([^<]*)</td>'
                      r'<td class="num">[^<]*</td><td class="num">([^<]*)</td><td class="num">([^<]*)</td>',
                      table[:table.index("</table>")])
    assert rows == [("ml", "10.00", "$20.00", "3.00", "$6.00")]
    assert NOTE in text_of(response)


def test_the_explorer_of_a_closed_month_shows_its_frozen_idle(idle_october, finance, client):
    client.force_login(finance)
    for grain in ("day", "month"):
        text = body_of(client.get("/explore/", {**OCTOBER, "format": "csv", "grain": grain})).decode()
        assert [(r["team"], r["allocated_gpu_hours"], r["idle_gpu_hours"], r["cost"], r["idle_cost"])
                for r in csv.DictReader(io.StringIO(text))] == [("research", "10.0", "3.0", "20.00", "6.00")]


def test_the_usage_api_of_a_closed_month_shows_its_frozen_idle(idle_october, finance, api):
    for group_by in ("team", "namespace"):
        body = api(finance).get("/api/v1/usage/", {**OCTOBER, "group_by": group_by}).json()
        assert [(r["allocated_gpu_hours"], r["idle_gpu_hours"], r["cost"]) for r in body["results"]] == \
            [(10.0, 3.0, "20.00")]


def test_a_viewer_reads_the_live_idle(idle_october, viewer, client):
    """A viewer sees no money: the live day, 12 h of which 5 idle."""
    client.force_login(viewer)
    kpis = dict(re.findall(r'<span class="label">([\w ]+)</span><span class="value"[^>]*>([^<]*)<',
                           html.unescape(client.get("/", OCTOBER).content.decode())))
    assert (kpis["Allocated"], kpis["Idle"]) == ("12.0", "5.0")
