"""A download is the page (#43, item 2): each page's CSV link carries the page's window and
filters (built by `ReportFilter.download_url`), the file is named after what it holds, has
the columns the page shows (money for those who may see it), and adds up to the page's
figures to the cent.

Before: the Idle GPUs link was the bare `/api/v1/idle/?format=csv` — the API's rolling window,
no listing filter (every pod with idle time), no cost, a file called `download.csv`; the
explorer's CSV rounded each row on its own, so its sums drifted from the overview's by cents.

Seed: tests/support/page_seed.py, rates H100 2.00 USD and A100 1.40 USD per GPU-hour
(test_money_on_pages.py). On the Idle GPUs page (utilization under 10 %, a stretch of 30
minutes) only notebook-0 is listed: two idle H100 hours → $4.00, all of it idle. train-0
(idle 600 s but 62.5 % used) and short-0 (a 20-minute stretch) have idle time, so the API's
unfiltered list holds them, the page does not.
"""
import csv
import io
import re
from decimal import Decimal

import pytest

from apps.accounting.models import UsageHour
from apps.clusters.models import Cluster, Device
from apps.teams.models import SINCE_EVER, Namespace, NamespaceLabel

from tests.support.bodies import body_of
from tests.support.page_seed import H100, at
from .test_money_on_pages import by_first, column, rates  # noqa: F401  (the fixture)
from .test_page_figures import rows_of


def csv_link(body):
    return re.search(r'href="([^"]+)"[^>]*id="csv-link"', body).group(1).replace("&amp;", "&")


def read_csv(response):
    return list(csv.DictReader(io.StringIO(body_of(response).decode())))


def test_idle_download_is_the_page(login, rates):  # noqa: F811
    c = login("finance")
    page = c.get("/idle/").content.decode()
    assert by_first(page, "idle-pods", "Idle GPU-h▼", "Cost", "Idle cost") == {"notebook-0": ("2.00", "$4.00", "$4.00")}
    link = csv_link(page)
    # the page's own window (the default "Last 7 days", as dates) and its listing filter
    start = re.search(r'name="start" value="([^"]+)"', page).group(1)
    end = re.search(r'name="end" value="([^"]+)"', page).group(1)
    assert f"start={start}" in link and f"end={end}" in link
    assert "max_utilization=0.1" in link and "min_idle_minutes=30" in link
    response = c.get(link)
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="idle-gpus_{start}_{end}.csv"'
    rows = read_csv(response)
    assert [(r["pod"], r["idle_gpu_hours"], r["cost"], r["idle_cost"], r["currency"]) for r in rows] == [
        ("notebook-0", "2.0", "4.00", "4.00", "USD")]


def test_idle_download_keeps_the_picked_filters(login, rates):  # noqa: F811
    c = login("finance")
    page = c.get("/idle/?team=nlp&max_utilization=1&min_idle_minutes=10").content.decode()
    # now short-0 (a 20-minute stretch, 5 % used) is listed too: 1 GPU-hour on the H100 → $2.00,
    # of which its 1200 idle seconds → 2.00 × 1200 / 3600 = $0.67
    shown = by_first(page, "idle-pods", "Idle GPU-h▼", "Cost", "Idle cost")
    assert shown == {"notebook-0": ("2.00", "$4.00", "$4.00"), "short-0": ("0.33", "$2.00", "$0.67")}
    response = c.get(csv_link(page))
    assert 'filename="idle-gpus_' in response["Content-Disposition"] and '_nlp.csv"' in response["Content-Disposition"]
    rows = {r["pod"]: ("$" + r["cost"], "$" + r["idle_cost"]) for r in read_csv(response)}
    assert rows == {pod: figures[1:] for pod, figures in shown.items()}


def test_idle_download_has_no_money_for_a_viewer(login, rates):  # noqa: F811
    c = login("viewer")
    response = c.get(csv_link(c.get("/idle/").content.decode()))
    text = body_of(response).decode()
    assert text.splitlines()[0].split(",")[-1] == "longest_idle_hours" and "cost" not in text


@pytest.fixture
def three_halves(rates):  # noqa: F811
    """Three more nlp namespaces, each holding the H100 gpu1 for 9 seconds at 13:00 of day D:
    2.00 × 9 / 3600 = 0.005 each. Rounded alone each is $0.01 (three make $0.03); together
    they are 0.015, and nlp's window is 6.00 + 0.015 = 6.015 → $6.02."""
    alpha = Cluster.objects.get(name="alpha")
    gpu1 = Device.objects.get(uuid="GPU-1")
    for i, name in enumerate(("nlp-a", "nlp-b", "nlp-c")):
        ns = Namespace.objects.create(cluster=alpha, name=name, label_team="nlp")
        NamespaceLabel.objects.create(namespace=ns, valid_from=SINCE_EVER, team_label="nlp")
        UsageHour.objects.create(cluster=alpha, device=gpu1, namespace=name, pod=f"p-{i}", hour_start=at(13),
                                 node="node-a", gpu_model=H100, gpu_fraction=1.0, sample_count=1, gpu_seconds=9.0,
                                 used_gpu_seconds=9.0, idle_gpu_seconds=0.0)
    return rates


def test_explorer_download_adds_up_to_the_overview(login, three_halves):
    c = login("finance")
    overview = c.get("/").content.decode()
    teams = by_first(overview, "teams", "Cost")
    assert teams["nlp"] == ("$6.02",)
    # vision: 4.00 + 0.20; the window: 4.20 + 6.015 = 10.215 → $10.22
    assert 'id="kpi-cost">$10.22<' in overview and teams["vision"] == ("$4.20",)
    explorer = c.get("/explore/").content.decode()
    link = csv_link(explorer)
    start = re.search(r'name="start" value="([^"]+)"', explorer).group(1)
    assert f"start={start}" in link and "grain=day" in link
    response = c.get(link)
    assert f'filename="utilization_{start}_' in response["Content-Disposition"]
    rows = read_csv(response)
    per_team = {}
    for r in rows:
        per_team[r["team"]] = per_team.get(r["team"], Decimal(0)) + Decimal(r["cost"])
    assert per_team == {"nlp": Decimal("6.02"), "vision": Decimal("4.20")}
    assert sum(per_team.values()) == Decimal("10.22")
    # the team picked: the file holds its rows only, and still adds up to its figure
    nlp = read_csv(c.get(csv_link(c.get("/explore/?team=nlp").content.decode())))
    assert sum(Decimal(r["cost"]) for r in nlp) == Decimal("6.02")
    # each row within a cent of its exact cost: the three 0.005 rows are 0.00, 0.01 and 0.01
    assert sorted(r["cost"] for r in nlp if r["namespace"] in ("nlp-a", "nlp-b", "nlp-c")) == ["0.00", "0.01", "0.01"]
    # and every row of the page (all on one page here) reads as in the file
    page_rows = {(r[3], r[4]): r[6] for r in rows_of(explorer, "explore-rows")}
    assert page_rows == {(r["namespace"], r["gpu_model"]): "$" + r["cost"] for r in rows}


def test_overview_breakdowns_add_up_to_its_total(login, three_halves):
    body = login("finance").get("/").content.decode()
    for table in ("teams", "daily"):
        costs = [Decimal(x.lstrip("$").replace(",", "")) for x in column(body, table, "Cost") if x.startswith("$")]
        assert sum(costs) == Decimal("10.22"), table
