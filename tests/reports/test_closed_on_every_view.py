"""Closed on every view (docs/chargeback.md, "Closed on every view"; issue 39): for a closed month
the overview's team rows, the usage API's money by team, the team page's namespace table and the
explorer's rows are the frozen statement's — its teams, its hours, its money split the same way —
whatever is relabelled or backdated after the close.

October: alpha's namespace `a` 10 h and beta's `b` 20 h on one H100 each at 2.00 USD:
statement 60.00 (alpha 20.00, beta 40.00), closed. Then `b`'s label history says delta for all of
October (a re-ingested label history) and a 9.00 rate is backdated to 1 October: live, delta
holds 20 h that would cost 180.00 today; the statement still bills beta 40.00 for them, and every
view that shows money reads October as billed (docs/chargeback.md, "Windows across a close"): `b`
is beta's, 20 h, 40.00; delta has nothing in October.
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


@pytest.fixture
def october(finance, admin_user):
    prod = make_cluster()
    for team in ("alpha", "beta", "delta"):
        make_team(team)
    make_namespace(prod, "a", label_team="alpha")
    b = make_namespace(prod, "b", label_team="beta")
    make_rate(hourly_rate="2.00")
    make_usage(make_device(prod, host="n1"), "a", utc(2026, 10, 10), hours=10)
    make_usage(make_device(prod, host="n2"), "b", utc(2026, 10, 10), hours=20)
    do_close_period("2026-10", actor=finance)
    label_namespace(b, "delta", since=utc(2026, 10, 1))
    do_save_rate(admin_user, Rate(gpu_model=H100, mig_profile="", price_class="on_demand",
                                  hourly_rate=Decimal("9.00"), currency="USD", effective_from=date(2026, 10, 1)))
    return prod


def test_the_usage_api_by_team_is_the_statement(october, finance, api):
    body = api(finance).get("/api/v1/usage/", {**OCTOBER, "group_by": "team"}).json()
    costs = {row["key"]: (row["allocated_gpu_hours"], row["cost"]) for row in body["results"]}
    # delta's 20 live hours are not billed in October (the frozen statement billed them to beta):
    # October is read as billed, so beta 20 h and 40.00 and no row of delta (before: delta 180.00,
    # then delta 0 h at 0.00 beside beta's statement row)
    assert costs == {"alpha": (10.0, "20.00"), "beta": (20.0, "40.00")}
    assert sum(Decimal(c) for _h, c in costs.values()) == Decimal("60.00")


def test_a_viewer_still_sees_live_usage(october, viewer, api):
    """No money beside them: the hours are live usage, as the label history says today."""
    body = api(viewer).get("/api/v1/usage/", {**OCTOBER, "group_by": "team"}).json()
    assert {row["key"]: row["allocated_gpu_hours"] for row in body["results"]} == {"alpha": 10.0, "delta": 20.0}


def overview_team_costs(page: str) -> dict:
    rows = re.findall(r'<tr><td><a href="/teams/(\w+)/[^"]*">\1</a></td><td class="num">[^<]*</td>'
                      r'<td class="num">([^<]*)</td>', page)
    return dict(rows)


def test_the_overview_team_rows_add_up_to_its_kpi(october, finance, client):
    client.force_login(finance)
    page = html.unescape(client.get("/", OCTOBER).content.decode())
    assert re.search(r'id="kpi-cost">\$60.00<', page)
    assert overview_team_costs(page) == {"alpha": "$20.00", "beta": "$40.00"}   # not delta $180


def namespace_costs(page: str) -> dict:
    table = page[page.index('id="namespaces"'):]
    table = table[:table.index("</table>")]
    return dict(re.findall(r'<tr><td>([\w-]+)</td><td class="num">[^<]*</td><td class="num">([^<]*)</td>', table))


def test_the_team_pages_show_the_statements_namespaces(october, finance, client):
    client.force_login(finance)
    beta = html.unescape(client.get("/teams/beta/", OCTOBER).content.decode())
    delta = html.unescape(client.get("/teams/delta/", OCTOBER).content.decode())
    assert namespace_costs(beta) == {"b": "$40.00"}          # billed to beta, though live shows it under delta
    assert namespace_costs(delta) == {}                      # not $180.00 a second time: October billed delta nothing


def explorer_rows(client, **params) -> list[dict]:
    import csv
    import io

    from tests.support.bodies import body_of

    text = body_of(client.get("/explore/", {**OCTOBER, "format": "csv", **params})).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_the_explorer_prices_a_closed_month_as_it_was_billed(october, finance, client):
    """The explorer's rows of October are priced with the card October was closed with (2.00),
    not the 9.00 backdated after the close: alpha's month costs 20.00, not 90.00."""
    client.force_login(finance)
    rows = explorer_rows(client, grain="month")
    alpha = [r for r in rows if r.get("team") == "alpha"]
    assert [r["cost"] for r in alpha] == ["20.00"], rows


def test_the_explorer_rows_follow_the_statements_teams(october, finance, client):
    """`b` relabelled to delta after the close stays beta's in the explorer, hours and money, in
    the CSV (by month and by day) and on the page: 20 h × 2.00 = 40.00, not delta's 180.00."""
    client.force_login(finance)
    by_month = [(r["team"], r["namespace"], r["allocated_gpu_hours"], r["cost"]) for r in explorer_rows(client, grain="month")]
    assert by_month == [("alpha", "a", "10.0", "20.00"), ("beta", "b", "20.0", "40.00")]
    by_day = [(r["period_start"], r["team"], r["namespace"], r["allocated_gpu_hours"], r["cost"])
              for r in explorer_rows(client, grain="day")]
    assert by_day == [("2026-10-10", "alpha", "a", "10.0", "20.00"), ("2026-10-10", "beta", "b", "20.0", "40.00")]
    page = html.unescape(client.get("/explore/", {**OCTOBER, "grain": "month"}).content.decode())
    table = page[page.index('id="explore-rows"'):]
    rows = re.findall(r"<tr><td>2026-10-01</td><td>prod</td><td>(\w+)</td><td>(\w+)</td><td>[^<]*</td>"
                      r'<td class="num">([^<]*)</td><td class="num">([^<]*)</td>', table[:table.index("</table>")])
    assert rows == [("alpha", "a", "10.00", "$20.00"), ("beta", "b", "20.00", "$40.00")]


def test_the_explorers_hourly_rows_of_a_closed_day_follow_the_close(october, finance, client):
    """A frozen day has no hours: October 10th's hourly rows are its live hours attributed as the
    close attributed them (b is beta's, not delta's) and priced with October's card, 2.00 an hour."""
    client.force_login(finance)
    rows = explorer_rows(client, start="2026-10-10", end="2026-10-11", grain="hour")
    assert {(r["team"], r["namespace"]) for r in rows} == {("alpha", "a"), ("beta", "b")}
    assert {r["cost"] for r in rows} == {"2.00"}
    assert sum(float(r["allocated_gpu_hours"]) for r in rows if r["team"] == "beta") == 20.0
