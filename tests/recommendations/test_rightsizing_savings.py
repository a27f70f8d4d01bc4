"""Savings you can take to a meeting (#43, item 1): one definition of a workload's monthly saving,
measured over a stated window and never extrapolated beyond what the workload cost in it; the
workloads held under a day are shown apart and left out of the headline; the team page, the
right-sizing page and the API give the same figure for the same window and say which.

Before: a saving was (rate now − rate advised) × instance-hours × 730 ÷ the workload's own hours
of history, so research's notebook nb-erin — an A100 held 12 idle hours of the 48 — was "worth
€511.00 a month" while it had cost 2.80 × 12 = €33.60, and that €511.00 went into research's
headline (its whole spend in the window: €33.60). The team page's "All … workloads" link opened
the trailing 28 days, not the team page's window.

Fleet and rates: tests/recommendations/rightsizing_fleet.py (48 hours before factories.END).
"""
import csv
import io
import re
from decimal import Decimal

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.support import factories as f
from . import rightsizing_fleet as fleet

WINDOW = {"start": "2026-11-18", "end": "2026-11-20"}


@pytest.fixture
def world(db):
    fleet.rates()
    c, teams = fleet.build()
    return {"cluster": c, **teams}


def as_user(role, teams=()):
    user = f.make_user(role, role, teams=list(teams))
    client, api = Client(), APIClient()
    client.force_login(user)
    api.force_authenticate(user)
    return client, api


def test_a_short_lived_notebook_saves_no_more_than_it_cost_and_stays_out_of_the_headline(world):
    client, api = as_user("admin")
    answer = api.get("/api/v1/rightsizing/", {**WINDOW, "team": "research"}).json()
    [nb] = answer["results"]
    # 2.80 × 12 hours held = 33.60: what it cost in the window, all of it saved by releasing it
    assert (nb["workload_name"], nb["monthly_cost_now"], nb["monthly_saving"], nb["confidence"], nb["in_totals"]) == (
        "nb-erin", "33.60", "33.60", "low", False)
    # research's headline leaves it out; it is counted apart
    assert answer["monthly_saving"] == []
    assert answer["left_out"] == {"workloads": 1, "monthly_saving": [{"amount": "33.60", "currency": "EUR"}]}
    team_page = client.get("/teams/research/", WINDOW).content.decode()
    assert "Nothing to save" in team_page and "€511.00" not in team_page
    assert re.search(r"Left out of the total: 1 short-lived workload held a GPU under a day\s+\(together €33\.60\)",
                     team_page)
    page = client.get("/advice/rightsizing/", {**WINDOW, "team": "research"}).content.decode()
    assert "Held under a day (1)" in page and "nb-erin" not in page
    short = client.get("/advice/rightsizing/", {**WINDOW, "team": "research", "show": "short"}).content.decode()
    assert "nb-erin" in short and "€33.60" in short


def test_team_page_page_and_api_say_the_same_figure_for_the_same_window(world):
    client, api = as_user("team_lead", [world["vision"]])
    team_page = client.get("/teams/vision/", WINDOW).content.decode()
    # vision: peaky 192.00 − 27.43 = 164.57 and infer-small 192.00 − 28.80 = 163.20: 327.77
    assert "€327.77" in team_page
    href = re.search(r'<a href="(/advice/rightsizing/[^"]*)">All 3 workloads', team_page).group(1).replace("&amp;", "&")
    page = client.get(href).content.decode()
    assert re.search(r'id="savings-total">You could save\s+<b>€327\.77</b> a month', page)
    answer = api.get("/api/v1/rightsizing/", {**WINDOW, "team": "vision"}).json()
    assert answer["monthly_saving"] == [{"amount": "327.77", "currency": "EUR"}]
    # and each says which window: the same one
    window = answer["window"]
    assert answer["window_start"] == "2026-11-18T00:00:00Z" and answer["window_end"] == "2026-11-20T00:00:00Z"
    assert window in team_page and window in page
    # never more than the team spent in it: 192.00 + 192.00 + 384.00 = 768.00
    spent = sum(float(r["monthly_cost_now"]) for r in answer["results"])
    assert spent == pytest.approx(768.00) and 327.77 <= spent


def test_the_right_sizing_page_is_paged(world):
    client, _ = as_user("admin")
    first = client.get("/advice/rightsizing/", {"window_days": 2, "page_size": 3}).content.decode()
    # 7 counted workloads (nb-erin apart), the largest saving first: peaky, infer-small, embedder
    assert "(1–3 of 7)" in first and "page 1 of 3" in first
    names = re.findall(r"<b>\w+ ([\w-]+)</b><br><small>", first)
    assert names == ["peaky", "infer-small", "embedder"]
    last = client.get("/advice/rightsizing/", {"window_days": 2, "page_size": 3, "page": 3}).content.decode()
    assert "(7–7 of 7)" in last
    assert client.get("/advice/rightsizing/", {"page": 9}).status_code == 400
    assert client.get("/advice/rightsizing/", {"page_size": 501}).status_code == 400


def test_every_yaml_has_a_copy_button(world):
    client, _ = as_user("admin")
    page = client.get("/advice/rightsizing/", {"window_days": 2}).content.decode()
    yamls = re.findall(r'<pre id="(yaml-\d+)">', page)
    assert yamls and all(f'data-copy="{y}"' in page for y in yamls)


def test_the_downloads_are_the_pages(world):
    client, _ = as_user("team_lead", [world["vision"]])
    page = client.get("/advice/rightsizing/", {**WINDOW, "team": "vision"}).content.decode()
    link = re.search(r'href="([^"]+)" download id="csv-link"', page).group(1).replace("&amp;", "&")
    assert link == "/api/v1/rightsizing/?start=2026-11-18&end=2026-11-20&team=vision&format=csv"
    response = client.get(link)
    assert response["Content-Disposition"] == 'attachment; filename="rightsizing_2026-11-18_2026-11-20_vision.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    # the file's counted savings add up to the page's headline: 164.57 + 163.20 + 0.00
    assert sum(Decimal(r["monthly_saving"]) for r in rows if r["in_totals"] == "True") == Decimal("327.77")
    advice = client.get("/advice/", {"window_days": 2}).content.decode()
    link = re.search(r'href="([^"]+)" download id="csv-link"', advice).group(1).replace("&amp;", "&")
    assert link == "/api/v1/quota-recommendations/?window_days=2&format=csv"
    assert "over the last 2 days" in advice
    response = client.get(link)
    assert response["Content-Disposition"] == 'attachment; filename="quota-advice_last-2-days.csv"'


def test_a_viewers_rows_come_largest_first_not_by_name(world):
    """#43 P3: without money every saving was None and the rows came in name order (five 3-hour
    notebooks before the forgotten one). Now by the GPU-hours the advice frees in the window:
    peaky and infer-small give back 6/7 of an H100 for 48 hours (41.14 each), l4-serve 3/4 of 48
    (36.00), embedder 2 of its 3 slices (3/7 × 48 = 20.57 GPU-hours held × 2/3 = 13.71)."""
    client, api = as_user("viewer")
    rows = api.get("/api/v1/rightsizing/", {"window_days": 2}).json()["results"]
    assert [r["workload_name"] for r in rows][:4] == ["infer-small", "peaky", "l4-serve", "embedder"]
    assert all(r["monthly_saving"] is None for r in rows)


def test_a_team_page_over_a_year_measures_right_sizing_over_its_last_31_days(world):
    """Right-sizing reads every hourly row of each workload, so its window has its own limit
    (MAX_RIGHTSIZING_DAYS, 31 days): a team page showing a year measures the block over the
    year's last 31 days, says so, and links to the list over those days, which the list answers
    (a link over the year would be a 400). The fleet's 48 hours lie inside them; 31 days are 744
    hours, more than a month's 730, so the saving is scaled down: 327.77 × 730 ÷ 744 = €321.61."""
    client, _ = as_user("team_lead", [world["vision"]])
    team_page = client.get("/teams/vision/", {"start": "2025-11-20", "end": "2026-11-20"})
    assert team_page.status_code == 200
    text = team_page.content.decode()
    assert "€321.61" in text
    assert "Measured over 2026-10-20 00:00 UTC – 2026-11-20 00:00 UTC (31 days)" in text
    href = re.search(r'<a href="(/advice/rightsizing/[^"]*)">All 3 workloads', text).group(1).replace("&amp;", "&")
    assert "start=2026-10-20" in href and "end=2026-11-20" in href
    page = client.get(href)
    assert page.status_code == 200 and "€321.61" in page.content.decode()
