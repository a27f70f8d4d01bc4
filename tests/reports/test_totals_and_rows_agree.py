"""Totals and rows agree (docs/chargeback.md, "Rounding"; issue 39): every table beside a total is
split from that one exact amount by largest remainder, so its rows add up to the total shown.

Namespace ml of team A holds one H100 for one hour on each of 1, 2 and 3 March at 0.335 USD per
GPU-hour: each day costs 0.335 exactly, the window 1.005 → 1.01. Rounded day by day the rows
would show 0.34 + 0.34 + 0.34 = 1.02 against 1.01; split from 1.01 they are 0.34, 0.34, 0.33.
"""
import html
import re

import pytest

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_usage, utc

pytestmark = pytest.mark.django_db


@pytest.fixture
def three_days(db):
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="0.335")
    gpu = make_device(prod)
    for day in (1, 2, 3):
        make_usage(gpu, "ml", utc(2026, 3, day, 10))


def test_the_overview_days_add_up_to_its_kpi(three_days, finance, client):
    client.force_login(finance)
    page = html.unescape(client.get("/", {"start": "2026-03-01", "end": "2026-03-04"}).content.decode())
    assert re.search(r'id="kpi-cost">\$1.01<', page)
    rows = {m.group(1): re.findall(r'<td class="num">([^<]*)</td>', m.group(2))
            for m in re.finditer(r"<tr><td>(2026-03-\d\d)</td>(.*?)</tr>", page)}
    # columns: capacity, allocated GPU-h, cost, …
    assert [rows[f"2026-03-0{d}"][2] for d in (1, 2, 3)] == ["$0.34", "$0.34", "$0.33"]


def test_the_overview_flags_unpriced_hours_beside_its_cost(three_days, finance, client):
    """An A100 with no rate held 2 h by ml on 2 March: the KPI and A's row say so beside the 1.01."""
    from apps.clusters.models import Cluster

    prod = Cluster.objects.get(name="prod")
    make_usage(make_device(prod, host="n-a100", model="NVIDIA A100-SXM4-80GB"), "ml", utc(2026, 3, 2, 12), hours=2)
    client.force_login(finance)
    page = html.unescape(client.get("/", {"start": "2026-03-01", "end": "2026-03-04"}).content.decode())
    assert re.search(r'id="kpi-cost">\$1.01 \+ 2.00 GPU-h unpriced<', page)
    assert re.search(r'>A</a></td><td class="num">[^<]*</td><td class="num">\$1.01 \+ 2.00 GPU-h unpriced<', page)
