"""The Idle GPUs page a page at a time (#14 P3): 1,000 idle pods on cluster `big`, server-side
paging and sorting, links that keep the filters, bad `page` / `page_size` / `sort` refused
with a 400 that names them. Before, the page listed all 1,000 pods and ignored the parameters.

Pod `nb-0000` … `nb-0999` each held one H100 for one hour, idle for 1800 + i seconds in one
stretch (never used): every one is listed (utilization 0, stretch ≥ 30 minutes), and ranked
by idle GPU-hours `nb-0999` comes first.
"""
import re

import pytest

from apps.accounting.models import UsageHour
from apps.clusters.models import Device

from tests.support.page_seed import H100, at
from .test_page_figures import rows_of
from tests.support.factories import make_cluster

N = 1000


@pytest.fixture
def big(seeded):
    cluster = make_cluster("big", prometheus_url="http://127.0.0.1:9")
    devices = Device.objects.bulk_create([
        Device(cluster=cluster, uuid=f"GPU-B{i}", host=f"node-{i // 8}", gpu_index=str(i % 8), model_name=H100,
               first_seen=at(0), last_seen=at(23)) for i in range(N)])
    UsageHour.objects.bulk_create([
        UsageHour(cluster=cluster, device=d, namespace="notebooks", pod=f"nb-{i:04d}", hour_start=at(10),
                  node=d.host, gpu_model=H100, gpu_fraction=1.0, sample_count=120, gpu_seconds=3600.0,
                  used_gpu_seconds=0.0, idle_gpu_seconds=1800.0 + i, idle_max_run_seconds=1800.0 + i)
        for i, d in enumerate(devices)])
    return cluster


def pods(body):
    return [r[0] for r in rows_of(body, "idle-pods")]


def test_the_first_page_of_a_thousand(login, big, django_assert_max_num_queries):
    c = login("viewer")
    with django_assert_max_num_queries(20):
        body = c.get("/idle/?cluster=big").content.decode()
    assert pods(body) == [f"nb-{i:04d}" for i in range(999, 949, -1)]
    assert "(1–50 of 1000)" in body and 'id="page-number">page 1 of 20<' in body
    second = c.get("/idle/?cluster=big&page=2").content.decode()
    assert pods(second)[0] == "nb-0949" and "(51–100 of 1000)" in second


def test_sorting_and_page_size(login, big):
    c = login("viewer")
    assert pods(c.get("/idle/?cluster=big&sort=pod").content.decode())[:2] == ["nb-0000", "nb-0001"]
    assert pods(c.get("/idle/?cluster=big&sort=-pod").content.decode())[0] == "nb-0999"
    # by utilization (all 0) the ties keep the cluster, namespace, pod order
    assert pods(c.get("/idle/?cluster=big&sort=utilization&page=3").content.decode())[0] == "nb-0100"
    body = c.get("/idle/?cluster=big&page_size=200&page=5&sort=longest_idle").content.decode()
    assert pods(body) == [f"nb-{i:04d}" for i in range(800, 1000)] and "page 5 of 5" in body


def test_links_keep_the_filters(login, big):
    body = login("viewer").get("/idle/?cluster=big&max_utilization=0.2&min_idle_minutes=30&sort=pod&page=2").content
    body = body.decode().replace("&amp;", "&")
    nxt = re.search(r'<a href="\?([^"]*)" rel="next">', body).group(1)
    assert set(nxt.split("&")) == {"cluster=big", "max_utilization=0.2", "min_idle_minutes=30", "sort=pod", "page=3"}
    # a column header sorts by it from the first page, keeping the filters; the sorted column's reverses it
    assert '<a href="?cluster=big&max_utilization=0.2&min_idle_minutes=30&sort=-idle_gpu_hours">Idle GPU-h' in body
    assert '<a href="?cluster=big&max_utilization=0.2&min_idle_minutes=30&sort=-pod">Pod▲' in body
    assert '<input type="hidden" name="sort" value="pod">' in body
    # the CSV holds every pod of the filter in the page's order, not the page
    csv_link = re.search(r'href="([^"]+)"[^>]*id="csv-link"', body).group(1)
    assert "page=" not in csv_link and "sort=pod" in csv_link and "cluster=big" in csv_link


@pytest.mark.parametrize("query, named", [
    ("page=0", "page"), ("page=two", "page"), ("page=21", "page"), ("page_size=0", "page_size"),
    ("page_size=501", "page_size"), ("page_size=1e3", "page_size"), ("sort=price", "sort"), ("sort=--pod", "sort"),
])
def test_bad_paging_is_a_400_naming_the_parameter(login, big, query, named):
    response = login("viewer").get(f"/idle/?cluster=big&{query}")
    assert response.status_code == 400
    assert re.search(rf"<li>{named}: {named}=", response.content.decode())


def test_the_api_answers_a_page_at_a_time(login, big):
    """/api/v1/idle/ built and sent its whole list (issue 42: 5.5 MB for a year at 16 GPUs); it
    answers 500 pods a page, with the ranking's count and the next page's URL, and its CSV
    (an export) still holds every pod."""
    c = login("viewer")
    first = c.get("/api/v1/idle/", {"cluster": "big"}).json()
    assert (first["count"], first["page"], first["pages"], first["previous"]) == (1000, 1, 2, None)
    assert [r["pod"] for r in first["results"]] == [f"nb-{i:04d}" for i in range(999, 499, -1)]
    assert first["next"] == "http://testserver/api/v1/idle/?cluster=big&page=2"
    second = c.get(first["next"]).json()
    assert [r["pod"] for r in second["results"]] == [f"nb-{i:04d}" for i in range(499, -1, -1)]
    assert second["next"] is None and second["previous"] == "http://testserver/api/v1/idle/?cluster=big&page=1"
    small = c.get("/api/v1/idle/", {"cluster": "big", "page_size": 3, "page": 2}).json()
    assert [r["pod"] for r in small["results"]] == ["nb-0996", "nb-0995", "nb-0994"] and small["pages"] == 334
    past = c.get("/api/v1/idle/", {"cluster": "big", "page": 5}).json()
    assert (past["results"], past["count"], past["next"]) == ([], 1000, None)
    assert past["previous"] == "http://testserver/api/v1/idle/?cluster=big&page=2"       # the last page
    assert c.get("/api/v1/idle/", {"cluster": "big", "page_size": 501}).json() == \
        {"page_size": "page_size='501' must lie between 1 and 500"}
    text = c.get("/api/v1/idle/", {"cluster": "big", "format": "csv"}).content.decode()
    assert len(text.strip().splitlines()) == 1 + 1000
