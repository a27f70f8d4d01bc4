"""One rounding, one total (docs/chargeback.md, "Rounding"): a month's total is its exact line
costs rounded once, and every view — by team, by namespace, unallocated cost apart or spread,
the CSV, the workbook's sheets, the FOCUS export, open or closed — shows that total and the same
figure per namespace, to the minor unit. Figures by hand."""
import csv
import io
from collections import defaultdict
from decimal import Decimal as D

import pytest

from apps.accounting.actions.periods import do_close_period
from apps.reports.statement_book import statement_book
from apps.accounting.ledger.statements import statement
from apps.reports.statement_rows import statement_payload

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_usage, utc
from tests.support.bodies import body_of

pytestmark = pytest.mark.django_db
URL = "/api/v1/chargeback/"


def payload(group_by="team", shared_idle="apart", scope=None):
    return statement_payload(statement("2026-03", shared_idle=shared_idle), group_by, scope, shared_idle)


def costs(p) -> dict:
    return {r["key"]: r["cost"] for r in p["results"]}


def csv_total(api, user, query) -> D:
    body = body_of(api(user).get(f"{URL}?period=2026-03&{query}&format=csv")).decode()
    return sum((D(r["cost"]) for r in csv.DictReader(io.StringIO(body)) if r["cost"]), D(0))


def focus_costs(api, user) -> dict:
    body = body_of(api(user).get(f"{URL}focus/?period=2026-03")).decode()
    out = defaultdict(D)
    for r in csv.DictReader(io.StringIO(body)):
        out[r["ResourceId"]] += D(r["BilledCost"])
    return dict(out)


@pytest.fixture
def half_cents(db):
    """Team A's namespaces ml and nb each hold an H100 for 20 minutes at 0.015 USD/h: 0.005 each,
    0.01 together. Rounded once the month is 0.01; largest remainder gives the cent to ml (the
    first of two equal remainders) and 0.00 to nb."""
    prod = make_cluster()
    make_rate(hourly_rate="0.015")
    for ns in ("ml", "nb"):
        make_namespace(prod, ns, "A")
        make_usage(make_device(prod), ns, utc(2026, 3, 7), instance_seconds_per_hour=1200.0)
    return prod


@pytest.mark.parametrize("closed", [False, True])
def test_two_namespaces_at_half_a_cent_are_one_cent_in_every_view(half_cents, finance, api, closed):
    if closed:
        do_close_period("2026-03", actor=finance)
    by_team, by_ns = payload("team"), payload("namespace")
    assert by_team["totals_by_currency"] == by_ns["totals_by_currency"] == {"USD": "0.01"}
    assert costs(by_team) == {"A": "0.01"}
    assert costs(by_ns) == {"prod/ml": "0.01", "prod/nb": "0.00"}     # was 0.01 + 0.01 = 0.02
    assert [(line["namespace"], line["cost"]) for line in by_team["results"][0]["lines"]] == [
        ("ml", "0.01"), ("nb", "0.00")]
    assert payload("team", "spread")["totals_by_currency"] == {"USD": "0.01"}
    assert csv_total(api, finance, "group_by=team") == csv_total(api, finance, "group_by=namespace") == D("0.01")
    book = statement_book(statement("2026-03"), None)
    assert [(r["namespace"], r["costs_by_currency"]) for r in book.by_namespace] == [
        ("ml", {"USD": "0.01"}), ("nb", {"USD": "0.00"})]
    assert book.totals_by_currency == {"USD": "0.01"}
    assert focus_costs(api, finance) == {"prod/ml": D("0.01"), "prod/nb": D("0.00")}


@pytest.fixture
def idle_cent(db):
    """At 0.01 USD/h: A's ml 1 h (0.01), B's web 1 h (0.01), 1 h unallocated (0.01); 0.03 in all.
    Spread, the unallocated cent is split 1:1 — half a cent each — and goes whole to A (the first
    of equal remainders): A 0.02, B 0.01, still 0.03 (was 0.02 + 0.02 = 0.04)."""
    prod = make_cluster()
    make_rate(hourly_rate="0.01")
    make_namespace(prod, "ml", "A")
    make_namespace(prod, "web", "B")
    make_usage(make_device(prod), "ml", utc(2026, 3, 8))
    make_usage(make_device(prod, host="node-2"), "web", utc(2026, 3, 8))
    make_usage(make_device(prod, host="node-3"), "", utc(2026, 3, 8))
    return prod


@pytest.mark.parametrize("closed", [False, True])
def test_spread_or_apart_the_total_is_the_same(idle_cent, finance, api, closed):
    if closed:
        do_close_period("2026-03", actor=finance)
    apart, spread = payload("team"), payload("team", "spread")
    assert costs(apart) == {"A": "0.01", "B": "0.01", "unallocated": "0.01"}
    assert costs(spread) == {"A": "0.02", "B": "0.01"}
    assert apart["totals_by_currency"] == spread["totals_by_currency"] == {"USD": "0.03"}
    spread_ns = payload("namespace", "spread")
    assert spread_ns["totals_by_currency"] == {"USD": "0.03"}
    # each namespace keeps its cent; the spread idle cent is a (shared idle) row of A's
    assert sorted((r["team"], r["key"], r["cost"]) for r in spread_ns["results"]) == [
        ("A", "prod/(shared idle)", "0.01"), ("A", "prod/ml", "0.01"),
        ("B", "prod/(shared idle)", "0.00"), ("B", "prod/web", "0.01")]
    assert csv_total(api, finance, "group_by=namespace&shared_idle=spread") == D("0.03")


def test_a_team_lead_sees_finances_figure_for_each_of_their_namespaces(half_cents, team_lead):
    from tests.support.factories import make_team
    make_team("A", lead=team_lead)
    mine = payload("namespace", scope={"A"})
    assert costs(mine) == {"prod/ml": "0.01", "prod/nb": "0.00"}
    assert mine["totals_by_currency"] == {"USD": "0.01"}
