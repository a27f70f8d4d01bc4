"""`/api/v1/rightsizing/` a page at a time (docs/api.md, "Paging"): the JSON answer carries one
page of the ranking, with `count`, `pages`, `next` and `previous`; the totals are the whole
ranking's; the CSV holds every workload; a bad `page_size` is a 400 naming it. Before, every
workload was sent at once: 27 MB for 35,000 workloads at 10,000 GPUs over 14 days
(docs/performance.md, "The longest reads").

Seven pods, `job-0` … `job-6`, each its own workload, each held one H100 for 30 hours ending at
the cluster's watermark and never used it: each is advised a release, and the more GPU-hours it
held the higher it ranks. Pod i held 1 + i × 0.1 GPUs (a time-sliced share grows with i)."""
import pytest

from tests.support.factories import hours_before, make_cluster, make_device, make_usage_hours, make_user, utc

pytestmark = pytest.mark.django_db

END = utc(2026, 11, 3)


@pytest.fixture
def ranked(client):
    cluster = make_cluster("prod", ingested_until=END)
    for i in range(7):
        make_usage_hours(make_device(cluster, host=f"node-{i}"), "ml", f"job-{i}", hours_before(END, 30), 1 + i / 10,
                         efficiency=0.0)
    client.force_login(make_user("admin-rs", "admin"))
    return client


def get(client, query):
    r = client.get(f"/api/v1/rightsizing/?{query}", secure=True)
    return r.status_code, r.json() if r["Content-Type"].startswith("application/json") else r.content.decode()


def test_pages_walk_the_whole_ranking(ranked):
    status, whole = get(ranked, "page_size=500")
    assert status == 200 and whole["count"] == 7 and whole["pages"] == 1
    assert [r["workload_name"] for r in whole["results"]] == [f"job-{i}" for i in range(6, -1, -1)]
    assert (whole["next"], whole["previous"]) == (None, None)

    status, first = get(ranked, "page_size=3&window_days=28")
    assert status == 200
    assert (first["count"], first["page"], first["pages"]) == (7, 1, 3)
    assert [r["workload_name"] for r in first["results"]] == ["job-6", "job-5", "job-4"]
    assert first["previous"] is None and "page=2" in first["next"] and "window_days=28" in first["next"]
    # the totals are the whole ranking's on every page
    assert first["monthly_saving"] == whole["monthly_saving"] and first["left_out"] == whole["left_out"]

    status, last = get(ranked, "page_size=3&page=3")
    assert [r["workload_name"] for r in last["results"]] == ["job-0"]
    assert last["next"] is None and "page=2" in last["previous"]
    # a page past the last is empty, its previous the last page
    status, past = get(ranked, "page_size=3&page=9")
    assert status == 200 and past["results"] == [] and "page=3" in past["previous"]


def test_the_csv_holds_every_workload_and_bad_paging_is_named(ranked):
    status, text = get(ranked, "format=csv&page_size=3")
    assert status == 200
    assert sum(1 for line in text.splitlines()[1:] if line.startswith("prod,ml,")) == 7
    status, body = get(ranked, "page_size=501")
    assert status == 400 and "page_size" in body
    status, body = get(ranked, "page=0")
    assert status == 400 and "page" in body
