"""The explorer a page at a time: a month of a large fleet is 150,000 daily rows, which the
page used to render all at once (47 MB of HTML, 41 s at 10,000 GPUs) and price every one of.
Now the table shows one page, priced alone; the CSV still has every row.

Cluster `wide`: namespaces `ns-000` … `ns-119` each held one H100 (2.00 USD per GPU-hour,
docs/figures.md) for one hour at 10:00 on day D, `ns-i` idle for 30·i seconds of it. Per day
that is 120 rows, all of day D: allocated 1.00 GPU-hour and cost 2.00 USD each, idle cost
2.00 × 30·i / 3600 USD (ns-119: 0.99 GPU-hour idle → 1.98 USD).
"""
import csv
import io
import re

import pytest

from apps.accounting.models import UsageHour
from apps.clusters.models import Device

from tests.support.page_seed import H100, at, seed_rates
from .test_page_figures import rows_of
from tests.support.bodies import body_of
from tests.support.factories import make_cluster

N = 120
BASE = "/explore/?cluster=wide&grain=day"


@pytest.fixture
def wide(seeded):
    seed_rates()
    cluster = make_cluster("wide", prometheus_url="http://127.0.0.1:9")
    devices = Device.objects.bulk_create([
        Device(cluster=cluster, uuid=f"GPU-W{i}", host=f"node-{i // 8}", gpu_index=str(i % 8), model_name=H100,
               first_seen=at(0), last_seen=at(23)) for i in range(N)])
    UsageHour.objects.bulk_create([
        UsageHour(cluster=cluster, device=d, namespace=f"ns-{i:03d}", pod=f"p-{i}", hour_start=at(10), node=d.host,
                  gpu_model=H100, gpu_fraction=1.0, sample_count=120, gpu_seconds=3600.0, used_gpu_seconds=1800.0,
                  idle_gpu_seconds=30.0 * i, idle_max_run_seconds=30.0 * i)
        for i, d in enumerate(devices)])
    return cluster


def namespaces(body):
    return [r[3] for r in rows_of(body, "explore-rows")]


def test_one_page_of_rows_priced_alone(login, wide, django_assert_max_num_queries):
    c = login("finance")
    with django_assert_max_num_queries(25):
        body = c.get(BASE).content.decode()
    assert namespaces(body) == [f"ns-{i:03d}" for i in range(50)]
    assert "(1–50 of 120, per day)" in body and 'id="page-number">page 1 of 3<' in body
    rows = rows_of(body, "explore-rows")
    # columns: day, cluster, team, namespace, model, allocated, cost, used, idle, idle cost, efficiency
    assert rows[10][5] == "1.00" and rows[10][6] == "$2.00" and rows[10][9] == "$0.17"   # 300 s idle × 2.00/3600
    last = c.get(BASE + "&page=3").content.decode()
    assert namespaces(last) == [f"ns-{i:03d}" for i in range(100, 120)] and "(101–120 of 120" in last


def test_sorted_by_idle_and_the_csv_has_every_row(login, wide):
    c = login("finance")
    body = c.get(BASE + "&sort=-idle_gpu_hours&page_size=10").content.decode().replace("&amp;", "&")
    assert namespaces(body) == [f"ns-{i:03d}" for i in range(119, 109, -1)]
    assert rows_of(body, "explore-rows")[0][9] == "$1.98"
    nxt = re.search(r'<a href="\?([^"]*)" rel="next">', body).group(1)
    assert set(nxt.split("&")) == {"cluster=wide", "grain=day", "sort=-idle_gpu_hours", "page_size=10", "page=2"}
    csv_link = re.search(r'href="([^"]+)"[^>]*id="csv-link"', body).group(1).replace("&amp;", "&")
    assert "page" not in csv_link and "sort=" not in csv_link
    table = list(csv.DictReader(io.StringIO(body_of(c.get(csv_link)).decode())))
    assert len(table) == N
    by_ns = {r["namespace"]: r for r in table}
    assert by_ns["ns-119"]["idle_cost"] == "1.98" and by_ns["ns-010"]["cost"] == "2.00"


@pytest.mark.parametrize("query, named", [
    ("page=4", "page"), ("page=x", "page"), ("page_size=0", "page_size"), ("sort=cost", "sort"),
])
def test_bad_paging_is_a_400_naming_the_parameter(login, wide, query, named):
    response = login("viewer").get(f"{BASE}&{query}")
    assert response.status_code == 400
    assert named in response.content.decode()
