"""Ingest through the pipeline into the database, then read the figures back."""
import pytest
from django.db.models import Sum

from apps.accounting.models import QueuedDemandHour, QuotaHour, UsageHour
from apps.clusters.models import Device
from apps.ingest.models import IngestRun
from apps.ingest.pipeline import IngestError, ingest
from apps.teams.models import Namespace

from tests.support.series import H, T0, dt, small_cluster_fetcher
from tests.support.factories import make_cluster

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster():
    return make_cluster("lab", prometheus_url="http://127.0.0.1:9")


def totals():
    agg = UsageHour.objects.aggregate(g=Sum("gpu_seconds"), u=Sum("used_gpu_seconds"), i=Sum("idle_gpu_seconds"),
                                      m=Sum("mig_seconds"))
    return {k: round(v or 0.0, 6) for k, v in agg.items()}, UsageHour.objects.count()


def test_figures_of_a_small_cluster(cluster):
    run = ingest(cluster, dt(T0), dt(T0 + 2 * H), fetcher=small_cluster_fetcher())
    assert run.status == "succeeded" and run.chunks_total == 1
    by_ns = dict(UsageHour.objects.values_list("namespace").annotate(s=Sum("gpu_seconds")))
    # ml/train: 120 samples × 60 s on a whole GPU; serve/emb: 120 × 60 s × 1/7; free H100: 7200 s unallocated,
    # and the six slices of GPU-B no instance occupies: 7200 s × 6/7 (docs/accounting.md, "When devices change")
    assert by_ns["ml"] == pytest.approx(7200.0)
    assert by_ns["serve"] == pytest.approx(7200.0 / 7)
    assert by_ns[""] == pytest.approx(7200.0 + 7200.0 * 6 / 7)
    ml = UsageHour.objects.filter(namespace="ml").aggregate(u=Sum("used_gpu_seconds"), i=Sum("idle_gpu_seconds"))
    assert ml["u"] == pytest.approx(3600 * 0.9)
    assert ml["i"] == pytest.approx(3600.0)
    assert UsageHour.objects.filter(namespace="serve").aggregate(m=Sum("mig_seconds"))["m"] == pytest.approx(7200.0)
    # the pending pod: 30 samples × 60 s × 2 GPUs, and never allocation
    assert QueuedDemandHour.objects.aggregate(q=Sum("queued_gpu_seconds"))["q"] == pytest.approx(3600.0)
    assert not UsageHour.objects.filter(pod="waiting").exists()
    assert QuotaHour.objects.filter(namespace="ml", hard=4.0).count() == 2
    assert dict(Namespace.objects.values_list("name", "label_team")) == {"ml": "research", "serve": "search"}
    assert Device.objects.exclude(mig_profile="").get(uuid="GPU-B").gpu_fraction == pytest.approx(1 / 7)
    assert Device.objects.get(uuid="GPU-B", mig_profile="").gpu_fraction == 1.0   # the board: its free slices
    cluster.refresh_from_db()
    assert cluster.detected_interval_seconds == 60.0 and cluster.detected_label_spelling == "plain"
    assert cluster.ingested_until == dt(T0 + 2 * H)


def test_reingest_same_and_overlapping_windows_is_idempotent(cluster):
    ingest(cluster, dt(T0), dt(T0 + 2 * H), fetcher=small_cluster_fetcher())
    first = totals()
    ingest(cluster, dt(T0), dt(T0 + 2 * H), fetcher=small_cluster_fetcher())
    assert totals() == first
    # an overlapping window that starts mid-hour is widened to whole hours
    ingest(cluster, dt(T0 + 1800), dt(T0 + H + 600), fetcher=small_cluster_fetcher())
    assert totals() == first
    assert QueuedDemandHour.objects.count() == 1


def test_failing_prometheus_leaves_figures_untouched(cluster):
    ingest(cluster, dt(T0), dt(T0 + 2 * H), fetcher=small_cluster_fetcher())
    before = totals()

    class Broken:
        def __init__(self):
            self.inner = small_cluster_fetcher()
            self.calls = 0

        def __call__(self, window):
            self.calls += 1
            if self.calls == 2:
                raise IngestError("Prometheus at http://x answered HTTP 503 to DCGM_FI_DEV_GPU_UTIL")
            data = self.inner(window)
            for series in data.dcgm.values():  # the first chunk would rewrite its hours with less
                series.clear()
            return data

    from django.test import override_settings
    with override_settings(INGEST_CHUNK_HOURS=1), pytest.raises(IngestError, match="503"):
        ingest(cluster, dt(T0), dt(T0 + 2 * H), fetcher=Broken())
    assert totals() == before
    run = IngestRun.objects.latest("started_at")
    assert run.status == "failed" and "503" in run.error and run.rows_written == 0


def test_window_checks(cluster):
    with pytest.raises(IngestError, match="empty"):
        ingest(cluster, dt(T0 + H), dt(T0), fetcher=small_cluster_fetcher())
    with pytest.raises(IngestError, match="future"):
        ingest(cluster, dt(T0 + 10 ** 9), dt(T0 + 10 ** 9 + H), fetcher=small_cluster_fetcher())
