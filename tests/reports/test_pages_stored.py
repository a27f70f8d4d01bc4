"""The chargeback page's month part (its team table and totals) is a stored fragment
(docs/performance.md, "Pages' stored fragments"): rendered once per version of the month's
inputs, then read back without touching usage or the statement's lines; any change of its inputs
shows on the next view, a team lead's view is its own fragment, and a template change is a miss.

March 2026, UTC billing: team A's namespace ml held one H100 for 3 hours on 1 March, team B's
cv one hour; 2.00 USD per GPU-hour. A 6.00, B 2.00, the month 8.00.
"""
import re
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounting.actions.namespaces import do_assign_namespace
from apps.accounting.actions.rates import do_save_rate
from apps.accounting.models import MonthBody, Rate
from apps.clusters.models import Cluster
from apps.teams.models import Namespace, Team

from tests.support.factories import H100, make_cluster, make_device, make_namespace, make_rate, make_team, \
    make_usage, two_teams_in_march, utc

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]   # stored answers: Postgres triggers log the inputs
PAGE = "/chargeback/?period=2026-03"
# usage, the stored cells and lines, a closed month's lines: what a stored fragment spares a view
MONTH_TABLES = ('"accounting_usagehour"', '"accounting_usageday"', '"accounting_monthline"',
                '"accounting_monthcell"', '"accounting_statementline"')


@pytest.fixture
def march(team_lead):
    make_team("A", lead=team_lead)
    return two_teams_in_march()


def teams(body: str) -> dict:
    """Team → cost from the page's team table, and its total as "Total"."""
    table = re.search(r'<table[^>]*id="statement-teams".*?</table>', body, re.S).group(0)
    out = {}
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("<tbody>")[1], re.S):
        cells = [re.sub(r"<[^>]+>", "", td).strip() for td in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)]
        out[cells[0]] = cells[1]
    return out


# The stored parts' rows are read through psycopg's own cursor (apps/accounting/stored/answers.py), which
# Django's query capture does not see: each reader is counted by name instead.
STORED_READERS = [("apps.accounting.stored.answers", "read_current"), ("apps.accounting.ledger.answer", "day_cells"),
                  ("apps.accounting.ledger.answer", "merged_day_cells")]
_stored_reads: list = []


@pytest.fixture(autouse=True)
def count_stored_reads(monkeypatch):
    import importlib
    _stored_reads.clear()
    for module, name in STORED_READERS:
        target = importlib.import_module(module)
        real = getattr(target, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            _stored_reads.append(f"{_name}{args[:2]}")
            return _real(*args, **kwargs)
        monkeypatch.setattr(target, name, counted)


def view(client, url=PAGE):
    """The page's HTML and what the view read of usage, the stored cells and lines, or a closed
    month's lines."""
    _stored_reads.clear()
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    read = [q["sql"] for q in queries.captured_queries if any(t in q["sql"] for t in MONTH_TABLES)]
    return response.content.decode(), read + list(_stored_reads)


def test_the_second_view_reads_the_stored_table(march, finance, client):
    client.force_login(finance)
    first, _ = view(client)
    assert teams(first) == {"A": "$6.00", "B": "$2.00", "Total": "$8.00"}
    second, read = view(client)
    assert not read, read
    assert teams(second) == teams(first)
    assert MonthBody.objects.filter(period="2026-03", key__startswith="chargeback-page?").count() == 1
    # the page around it is still the page: the month's state, its links, the CSRF-bearing nav
    assert "badge open" in second and "Download statement (XLSX)" in second


def _hour(march, actor):
    make_usage(march["gpu"], "ml", utc(2026, 3, 20, 5), hours=1)          # A: 4 h × 2.00


def _rate(march, actor):
    rate = Rate.objects.get()
    rate.hourly_rate = Decimal("3.00")
    do_save_rate(actor, rate)


def _move(march, actor):
    do_assign_namespace(Namespace.objects.get(name="cv"), Team.objects.get(name="A"), date(2026, 3, 1), actor=actor)


WRITES = {
    "an ingested hour": (_hour, {"A": "$8.00", "B": "$2.00", "Total": "$10.00"}),
    "a rate edit": (_rate, {"A": "$9.00", "B": "$3.00", "Total": "$12.00"}),              # 3 h, 1 h × 3.00
    "a namespace move": (_move, {"A": "$8.00", "Total": "$8.00"}),                         # cv is A's: 4 h × 2.00
}


def views_around(client, view, change, data, actor):
    """Two views (the second from what the first stored), `change(data, actor)`, then two more:
    (the first view after the write, the second, what the second read). The team page's tests
    take it too."""
    view(client)
    view(client)
    change(data, actor)
    after, _ = view(client)
    again, read = view(client)
    return after, again, read


@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_shows_on_the_next_view(march, write, finance, admin_user, client):
    client.force_login(finance)
    change, expected = WRITES[write]
    after, again, read = views_around(client, view, change, march, admin_user)
    assert teams(after) == expected                  # never the stored table of before
    assert teams(again) == expected and not read


def test_a_team_lead_sees_only_their_teams_rows(march, finance, team_lead, client):
    client.force_login(finance)
    view(client)
    view(client)
    client.force_login(team_lead)
    body, _ = view(client)
    assert teams(body) == {"A": "$6.00", "Total": "$6.00"} and ">B<" not in body
    body, read = view(client)
    assert teams(body) == {"A": "$6.00", "Total": "$6.00"} and not read
    assert MonthBody.objects.filter(period="2026-03", key__startswith="chargeback-page?").count() == 2


def test_the_drill_down_and_shared_idle_are_their_own_views(march, finance, client):
    client.force_login(finance)
    view(client)
    drilled, _ = view(client, PAGE + "&team=A")
    assert "$2.00/h" in drilled and 'class="selected"' in drilled
    spread, _ = view(client, PAGE + "&shared_idle=spread")
    assert 'value="spread" selected' in spread and 'shared_idle=spread&amp;team=A' in spread


def test_a_template_change_is_a_miss(march, finance, client, settings, tmp_path):
    client.force_login(finance)
    view(client)
    view(client)
    source = Path(django_settings.BASE_DIR, "templates", "chargeback", "_statement_table.html").read_text()
    (tmp_path / "chargeback").mkdir()
    (tmp_path / "chargeback" / "_statement_table.html").write_text(source.replace(
        'id="statement-teams"', 'id="statement-teams" data-changed="yes"'))
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [tmp_path, *settings.TEMPLATES[0]["DIRS"]]}]
    body, _ = view(client)
    assert 'data-changed="yes"' in body and teams(body) == {"A": "$6.00", "B": "$2.00", "Total": "$8.00"}
    assert MonthBody.objects.filter(period="2026-03", key__startswith="chargeback-page?").count() == 2


# ---------------------------------------------------------------- the running month

NOON_18 = utc(2026, 11, 18, 12)
CLOCK = utc(2026, 11, 18, 13, 30)


@pytest.fixture
def november(db, monkeypatch):
    """"Now" is 13:30 UTC on Wednesday 18 November 2026, the watermark at noon. Team vision holds
    one H100 4 hours (00:00-04:00) every day from 20 October at 2.00: month to date 18 days × 8.00
    = 144.00, every day 8.00, 12.5 days left: projected 144 + 12.5 × 8 = 244.00."""
    monkeypatch.setattr("django.utils.timezone.now", lambda: CLOCK)
    prod = make_cluster()
    make_rate(H100, "2.00", effective_from=date(2026, 1, 1))
    make_namespace(prod, "cv", "vision")
    gpu = make_device(prod, "node-2")
    for back in range(30):
        make_usage(gpu, "cv", utc(2026, 10, 20) + timedelta(days=back), 4)
    Cluster.objects.filter(pk=prod.pk).update(ingested_until=NOON_18)
    return prod


def forecast(body: str) -> str:
    return re.sub(r"<[^>]+>|\s+", " ", re.search(r'<td class="num forecast">(.*?)</td>', body, re.S).group(1)).strip()


def test_the_running_months_table_follows_the_stored_forecast(november, finance, client):
    client.force_login(finance)
    page = "/chargeback/?period=2026-11"
    first, _ = view(client, page)
    assert teams(first)["vision"] == "$144.00" and forecast(first).startswith("≈ $244.00")
    again, read = view(client, page)
    assert forecast(again) == forecast(first) and not read
    # the watermark moves to 13:00 with no new usage: 144 + (8 + 11/24 + 4) × 8 = 243.67
    Cluster.objects.filter(pk=november.pk).update(ingested_until=utc(2026, 11, 18, 13))
    moved, _ = view(client, page)
    assert forecast(moved).startswith("≈ $243.67")
    # everything at 3.00: 18 days × 12.00 = 216.00, + (8 + 11/24 + 4) × 12 = 365.50
    rate = Rate.objects.get()
    rate.hourly_rate = Decimal("3.00")
    do_save_rate(None, rate)
    repriced, _ = view(client, page)
    assert teams(repriced)["vision"] == "$216.00" and forecast(repriced).startswith("≈ $365.50")
    stored, read = view(client, page)
    assert forecast(stored) == forecast(repriced) and not read


# ---------------------------------------------------------------- the team page

TEAM_PAGE = "/teams/A/?start=2026-03-01&end=2026-04-01"
APRIL_10 = utc(2026, 4, 10, 12)


@pytest.fixture
def april(march, monkeypatch):
    """"Now" is noon on 10 April 2026, the watermark at midnight: March is last month, April runs."""
    monkeypatch.setattr("django.utils.timezone.now", lambda: APRIL_10)
    Cluster.objects.update(ingested_until=utc(2026, 4, 10))
    return march


def team_view(client, url=TEAM_PAGE):
    """`view` of the team page (its right-sizing block and quota table are stored parts too:
    tests/reports/test_team_page_parts.py)."""
    return view(client, url)


def team_page(body: str) -> tuple[dict, str]:
    """Namespace → (allocated GPU-h, cost) of the team page's table, and last month's cost."""
    table = re.search(r'<table[^>]*id="namespaces".*?</table>', body, re.S).group(0)
    rows = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S):
        cells = [re.sub(r"<[^>]+>", "", td).strip() for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        rows[cells[0]] = (cells[1], cells[2])
    costs = re.search(r'<table[^>]*id="costs".*?</table>', body, re.S).group(0)
    last = re.search(r"<tr><td>Last month.*?</tr>", costs, re.S).group(0)
    return rows, re.sub(r"<[^>]+>", "", re.search(r'<td class="num cost">(.*?)</td>', last, re.S).group(1)).strip()


def test_the_team_pages_second_view_reads_no_month_table(april, finance, client):
    client.force_login(finance)
    first, _ = team_view(client)
    assert team_page(first) == ({"ml": ("3.00", "$6.00")}, "$6.00")
    second, read = team_view(client)
    assert not read, read
    assert second.count("id=\"namespaces\"") == 1 and team_page(second) == team_page(first)
    assert "id=\"forecast\"" in second and "No GPU ResourceQuota" in second


TEAM_WRITES = {
    "an ingested hour": (_hour, ({"ml": ("4.00", "$8.00")}, "$8.00")),
    "a rate edit": (_rate, ({"ml": ("3.00", "$9.00")}, "$9.00")),
    "a namespace move": (_move, ({"cv": ("1.00", "$2.00"), "ml": ("3.00", "$6.00")}, "$8.00")),
}


@pytest.mark.parametrize("write", list(TEAM_WRITES))
def test_a_write_shows_on_the_team_pages_next_view(april, write, finance, admin_user, client):
    client.force_login(finance)
    team_view(client)
    team_view(client)
    change, expected = TEAM_WRITES[write]
    change(april, admin_user)
    after, _ = team_view(client)
    assert team_page(after) == expected
    again, read = team_view(client)
    assert team_page(again) == expected and not read


def test_the_team_page_is_stored_per_team_and_money_view(april, finance, viewer, team_lead, client):
    client.force_login(finance)
    team_view(client)
    b, _ = view(client, "/teams/B/?start=2026-03-01&end=2026-04-01")
    assert '<td>cv</td>' in b and '<td>ml</td>' not in b
    client.force_login(team_lead)
    assert client.get("/teams/B/?start=2026-03-01&end=2026-04-01").status_code == 403
    body, read = team_view(client)
    assert team_page(body) == ({"ml": ("3.00", "$6.00")}, "$6.00") and not read
    client.force_login(viewer)
    body, _ = team_view(client)
    assert "$6.00" not in body and "<td>ml</td>" in body and 'id="costs"' not in body


def test_a_team_page_template_change_is_a_miss(april, finance, client, settings, tmp_path):
    client.force_login(finance)
    team_view(client)
    team_view(client)
    source = Path(django_settings.BASE_DIR, "templates", "reports", "_team_usage.html").read_text()
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "_team_usage.html").write_text(source.replace(
        'id="namespaces"', 'id="namespaces" data-changed="yes"'))
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [tmp_path, *settings.TEMPLATES[0]["DIRS"]]}]
    body, _ = team_view(client)
    assert 'data-changed="yes"' in body and team_page(body) == ({"ml": ("3.00", "$6.00")}, "$6.00")
