"""The team page's right-sizing block and quota table are stored too (docs/performance.md, "The
team page"): a second view reads neither the workloads' usage, their pod owners nor the quota
hours, and each of their inputs — a pod's owner, a quota hour, an ingested hour, a rate edit —
shows on the next view. A window that is not a whole month is computed on every view.

March 2026 as in test_pages_stored: team A's namespace ml held one H100 for 3 hours on 1 March
(pod pod-0, half of it used), team B's cv one hour; 2.00 USD per GPU-hour; "now" is noon on
10 April, the watermark at its midnight. Here ml's pod idle-0 also held the H100 for the 24 hours
of 2 March and never used it: released, it saves 2.00 × 24 h = 48.00 in March's 744 hours, scaled
down to a 730-hour month (never up; docs/advice-and-alerts.md, "What a saving is"): 48 × 730 ÷
744 = 47.096… → $47.10 a month.
"""
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounting.models import PodOwner

from tests.reports.test_pages_stored import TEAM_PAGE, _rate, april, march, views_around  # noqa: F401  (fixtures)
from tests.support.factories import make_quota, make_usage, utc

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]   # stored parts: Postgres triggers log the inputs
PARTS = ('"accounting_podowner"', '"accounting_quotahour"', '"accounting_usagehour"')


def view(client, url=TEAM_PAGE):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    read = [q["sql"] for q in queries.captured_queries if any(t in q["sql"] for t in PARTS)]
    return response.content.decode(), read


def block(body: str) -> str:
    section = re.search(r'<section id="rightsizing-summary">.*?</section>', body, re.S).group(0)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", section)).strip()


def with_idle_pod(april):
    make_usage(april["gpu"], "ml", utc(2026, 3, 2), hours=24, pod="idle-0", used_ratio=0.0)
    return april


def owners(april, actor):
    """Ingest learns both pods belong to the Deployment trainer (as its upsert writes them)."""
    PodOwner.objects.bulk_create([
        PodOwner(cluster=april["cluster"], namespace="ml", pod=pod, owner_kind="ReplicaSet",
                 owner_name="trainer-5d4f", workload_kind="Deployment", workload_name="trainer",
                 last_seen=utc(2026, 3, 2)) for pod in ("pod-0", "idle-0")],
        update_conflicts=True, unique_fields=["cluster", "namespace", "pod"],
        update_fields=["owner_kind", "owner_name", "workload_kind", "workload_name", "last_seen"])


def another_pod(april, actor):
    make_usage(april["other"], "ml", utc(2026, 3, 3), hours=2, pod="eval-0", used_ratio=1.0)


def quota(april, actor):
    make_quota(april["cluster"], "ml", [utc(2026, 3, 1, h) for h in range(3)], hard=4, used=1)


BEFORE = "Pod idle-0 (ml) Release it: never used $47.10 medium (24 h) All 2 workloads"
WRITES = {
    # one workload of both pods: its 27 hours, 3 of them half used, are not "never used"
    "a pod's owner": (owners, "Nothing to save: every workload fits its GPU (or is unpriced). All 1 workload"),
    "an ingested hour": (another_pod, "Pod idle-0 (ml) Release it: never used $47.10 medium (24 h) All 3 workloads"),
    "a rate edit": (_rate, "Pod idle-0 (ml) Release it: never used $70.65 medium (24 h) All 2 workloads"),  # 3 × 24 × 730 / 744
}


def test_the_second_view_reads_no_workload_or_quota_table(april, finance, client):
    with_idle_pod(april)
    client.force_login(finance)
    first, _ = view(client)
    assert BEFORE in block(first) and "$47.10 a month" in block(first)
    second, read = view(client)
    assert not read, read
    assert block(second) == block(first) and "No GPU ResourceQuota" in second


@pytest.mark.parametrize("write", list(WRITES))
def test_each_input_of_the_block_shows_on_the_next_view(april, write, finance, admin_user, client):
    with_idle_pod(april)
    client.force_login(finance)
    change, expected = WRITES[write]
    after, again, read = views_around(client, view, change, april, admin_user)
    assert expected in block(after)
    assert block(again) == block(after) and not read


def test_a_quota_hour_shows_on_the_next_view(april, finance, admin_user, client):
    client.force_login(finance)
    view(client)
    assert "No GPU ResourceQuota" in view(client)[0]
    quota(april, admin_user)
    after, _ = view(client)
    table = re.search(r'<table[^>]*id="quota".*?</table>', after, re.S).group(0)
    cells = [re.sub(r"<[^>]+>", "", td).strip() for td in re.findall(r"<td[^>]*>(.*?)</td>", table, re.S)]
    assert cells == ["ml", "4", "1", "0.0"]      # hard 4, peak used 1, never at the quota
    again, read = view(client)
    assert "id=\"quota\"" in again and not read


def test_a_window_that_is_not_a_month_is_computed_on_every_view(april, finance, client):
    with_idle_pod(april)
    client.force_login(finance)
    url = "/teams/A/?start=2026-03-01&end=2026-03-15"
    view(client, url)
    body, read = view(client, url)
    # the block is computed on every view, from the window's workload usage as the store keeps it
    # (docs/performance.md, "Right-sizing and quota advice"): no pod owner is read again
    assert not any('"accounting_podowner"' in sql for sql in read)
    assert any('"accounting_quotahour"' in sql for sql in read)
    # a 14-day window (336 hours, under a month) gives its own saving: 2.00 × 24 = $48.00, never
    # extrapolated (before: × 730 ÷ the 312 hours from idle-0's first hour, $112.31)
    assert "Pod idle-0 (ml) Release it: never used $48.00 medium (24 h) All 2 workloads" in block(body)


def test_a_view_reads_the_mapping_version_with_the_months_and_the_clusters_once(april, finance, client):
    """The team mapping's version comes out of the page's one read of the log's versions
    (`prefetch_versions`), and the clusters' watermarks (freshness line, forecast, the advice's
    windows) out of one read of the clusters."""
    with_idle_pod(april)
    client.force_login(finance)
    view(client)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(TEAM_PAGE).status_code == 200
    sqls = [q["sql"] for q in queries.captured_queries]
    assert not [s for s in sqls if "accounting_inputchange" in s], sqls
    assert len([s for s in sqls if 'FROM "clusters_cluster"' in s]) == 1, sqls
