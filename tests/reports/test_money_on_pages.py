"""Money beside every usage figure, for the roles that may see it (#14 P2): cost and idle cost
on the overview (window, days, teams, GPU models with their unallocated capacity), the team
page's namespaces, the explorer's rows and CSV, and the Idle GPUs page's pods and capacity.
Before, none of these pages showed money at all.

All from the one pricing definition (apps/accounting/pricing/rates.py), checked against the seed
(tests/support/page_seed.py) by hand, with docs/figures.md's rates: H100 2.00 USD per GPU-hour, A100
1.40 USD per GPU-hour, no rate of its own for the 1g.10gb profile.

- vision (cv-train): H100 2 h → 4.00; the MIG slice 1/7 GPU-hour × 1.40 → 0.20; total 4.20.
  Idle: train-0's last 600 s on the H100 → 600/3600 × 2.00 = 0.33.
- nlp (nlp-dev): 3 H100 hours → 6.00. Idle: 3600 + 3600 + 1200 s = 8400 s → 4.67.
- window: 10.20, idle 5.00 (0.3333… + 4.6666…). Unallocated: gpu0's H100 hour at 12:00 → 2.00.
"""
import csv
import io
import re
from datetime import date
from decimal import Decimal

import pytest

from apps.accounting.core.ratecard import RateCard, RateEntry
from apps.accounting.models import Rate
from apps.accounting.pricing.rates import idle_share, price_cells_detail
from apps.accounting.core.lines import Cell

from tests.support.page_seed import A100, H100, day_d
from .test_page_figures import headers_of, rows_of
from tests.support.bodies import body_of

SINCE = date(2020, 1, 1)


@pytest.fixture
def rates(seeded):
    Rate.objects.create(gpu_model=H100, hourly_rate=Decimal("2.00"), currency="USD", effective_from=SINCE)
    Rate.objects.create(gpu_model=A100, hourly_rate=Decimal("1.40"), currency="USD", effective_from=SINCE)
    return seeded


def column(body, table_id, header):
    i = headers_of(body, table_id).index(header)
    return [r[i] for r in rows_of(body, table_id)]


def by_first(body, table_id, *headers):
    names = headers_of(body, table_id)
    idx = [names.index(h) for h in headers]
    return {r[0]: tuple(r[i] for i in idx) for r in rows_of(body, table_id) if len(r) == len(names)}


def test_idle_cost_of_a_mig_slice_with_a_profile_rate():
    # Half of a 1g.10gb slice's hour was idle: 1800 of its 3600 instance-seconds at 0.25 per instance-hour.
    cell = Cell(cluster_id=1, cluster="alpha", namespace="cv", team="vision", gpu_model=A100, mig_profile="1g.10gb",
                day=date(2026, 3, 2), gpu_seconds=3600 / 7, used_gpu_seconds=0.0, idle_gpu_seconds=1800 / 7,
                mig_seconds=3600.0)
    card = RateCard([RateEntry(A100, "1g.10gb", "on_demand", Decimal("0.25"), "USD", SINCE),
                     RateEntry(A100, "", "on_demand", Decimal("1.40"), "USD", SINCE)])
    [idle] = idle_share([cell])
    assert (idle.gpu_seconds, idle.mig_seconds, idle.used_gpu_seconds) == (1800 / 7, 1800.0, 0.0)
    assert price_cells_detail([idle], card)[:2] == (Decimal("0.125"), "USD")
    assert price_cells_detail([cell], card)[:2] == (Decimal("0.25"), "USD")


def test_overview_shows_cost_beside_each_figure(login, rates):
    body = login("finance").get("/").content.decode()
    assert 'id="kpi-cost">$10.20<' in body and 'id="kpi-idle-cost">$5.00<' in body
    assert by_first(body, "teams", "Cost", "Idle cost") == {"vision": ("$4.20", "$0.33"),
                                                             "nlp": ("$6.00", "$4.67")}
    assert by_first(body, "daily", "Cost", "Idle cost") == {day_d().isoformat(): ("$10.20", "$5.00")}
    assert by_first(body, "models", "Cost", "Unallocated cost") == {H100: ("$10.00", "$2.00"),
                                                                     A100: ("$0.20", "–")}


def test_overview_costs_agree_with_the_statement(login, rates):
    c = login("finance")
    teams = by_first(c.get("/?start=2020-01-01&end=2021-01-01").content.decode(), "teams", "Cost")
    assert teams == {}                                           # another window: nothing
    period = day_d().strftime("%Y-%m")
    statement = {r["key"]: r["cost"] for r in c.get("/api/v1/chargeback/", {"period": period}).json()["results"]}
    assert (statement["vision"], statement["nlp"]) == ("4.20", "6.00")


def test_team_page_explorer_and_csv(login, rates):
    c = login("team_lead")
    team = c.get("/teams/vision/").content.decode()
    assert by_first(team, "namespaces", "Cost", "Idle cost") == {"cv-train": ("$4.20", "$0.33")}

    c = login("finance")
    body = c.get("/explore/").content.decode()
    assert list(zip(column(body, "explore-rows", "GPU model"), column(body, "explore-rows", "Cost"),
                    column(body, "explore-rows", "Idle cost"))) == [
        (H100, "$6.00", "$4.67"), (A100, "$0.20", "$0.00"), (H100, "$4.00", "$0.33")]
    hourly = c.get("/explore/?grain=hour&namespace=cv-train").content.decode()
    assert column(hourly, "explore-rows", "Cost") == ["$0.20", "$2.00", "$2.00"]
    assert column(hourly, "explore-rows", "Idle cost") == ["$0.00", "$0.00", "$0.33"]
    lines = list(csv.DictReader(io.StringIO(body_of(c.get("/explore/?format=csv")).decode())))
    assert [(r["cost"], r["idle_cost"], r["currency"]) for r in lines] == [
        ("6.00", "4.67", "USD"), ("0.20", "0.00", "USD"), ("4.00", "0.33", "USD")]


def test_idle_page_says_what_each_idle_pod_cost(login, rates):
    body = login("finance").get("/idle/").content.decode()
    # notebook-0 held an H100 for two idle hours: 4.00, all of it idle
    assert by_first(body, "idle-pods", "Cost", "Idle cost") == {"notebook-0": ("$4.00", "$4.00")}
    assert [(r[1], r[4]) for r in rows_of(body, "unallocated")] == [(A100, "–"), (H100, "$2.00")]


@pytest.mark.parametrize("url", ["/", "/teams/vision/", "/explore/", "/explore/?format=csv", "/idle/"])
def test_no_money_for_a_viewer(login, rates, url):
    body = body_of(login("viewer").get(url)).decode()
    assert "USD" not in body and "$" not in body
    assert not re.search(r"<th[^>]*>(Idle |Unallocated )?[Cc]ost</th>", body) and ",cost," not in body


def test_unpriced_usage_says_so(login, seeded):
    body = login("finance").get("/").content.decode()
    assert re.search(r'id="kpi-cost">unpriced<', body)
    assert by_first(body, "teams", "Cost") == {"vision": ("unpriced",), "nlp": ("unpriced",)}
