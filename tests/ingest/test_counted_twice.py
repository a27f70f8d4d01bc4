"""The same GPU in two clusters (docs/ingest.md; issue 39): a GPU (by UUID) that an ingest finds in
an hour another cluster's rows hold it in too is billed twice; the run log says so, naming both
clusters."""
import pytest

from apps.ingest.pipeline import ingest

from tests.support.factories import make_cluster
from tests.support.series import T0, dt, small_cluster_fetcher

pytestmark = pytest.mark.django_db


def test_a_gpu_reached_through_two_clusters_is_flagged_in_the_run_log():
    prod, again = make_cluster("prod"), make_cluster("prod-again")
    first = ingest(prod, dt(T0), dt(T0 + 7200), fetcher=small_cluster_fetcher(), now=dt(T0 + 10 * 3600))
    assert not any("billed twice" in w for w in first.warnings)          # nothing to compare with yet
    second = ingest(again, dt(T0), dt(T0 + 7200), fetcher=small_cluster_fetcher(), now=dt(T0 + 10 * 3600))
    twice = [w for w in second.warnings if "billed twice" in w]
    # GPU-A (ml/train), GPU-B (the MIG instance of serve/emb) and GPU-C (held by nobody: its
    # capacity is counted in both clusters too) are in both clusters' rows in both hours
    assert twice == [
        f"GPU {uuid} is in clusters prod-again and prod in the same hour (2 hour(s) from 2026-10-05 10:00 UTC): "
        "its hours are billed twice; remove one cluster entry, or give each a series selector that tells them apart"
        for uuid in ("GPU-A", "GPU-B", "GPU-C")]


def test_metrics_count_the_gpus_counted_twice():
    from gpuportal.health import cluster_ingest_state

    prod, again = make_cluster("prod"), make_cluster("prod-again")
    ingest(prod, dt(T0), dt(T0 + 7200), fetcher=small_cluster_fetcher(), now=dt(T0 + 10 * 3600))
    ingest(again, dt(T0), dt(T0 + 7200), fetcher=small_cluster_fetcher(), now=dt(T0 + 10 * 3600))
    state = {c["cluster"]: c["gpus_counted_twice"] for c in cluster_ingest_state()}
    assert state == {"prod": 0, "prod-again": 3}        # prod's run came first: it saw nothing to compare


def test_the_ingest_runs_admin_shows_a_banner(client):
    from tests.support.factories import make_user

    prod, again = make_cluster("prod"), make_cluster("prod-again")
    ingest(prod, dt(T0), dt(T0 + 7200), fetcher=small_cluster_fetcher(), now=dt(T0 + 10 * 3600))
    ingest(again, dt(T0), dt(T0 + 7200), fetcher=small_cluster_fetcher(), now=dt(T0 + 10 * 3600))
    client.force_login(make_user("root", "admin", superuser=True, staff=True))
    page = client.get("/admin/ingest/ingestrun/").content.decode()
    assert "GPUs billed twice (the same UUID in two clusters in the same hour; see the runs&#x27; warnings): " \
           "prod-again: 3" in page

