"""The fleet's default right-sizing window, computed by the worker (docs/performance.md, "The
longest reads"): once a month's stored answer is current (`month_prepared`, sent after every
ingest's writes), each cluster's workload usage over the trailing `ADVICE_WINDOW_DAYS` up to its
watermark is brought into the store of window answers, so the right-sizing page, the team
page's summary and `/api/v1/rightsizing/` without a window read stored rows instead of
aggregating every hourly row of four weeks inside a web request. Other windows are computed when
asked, within their own limits (docs/security.md, "No request ties up the portal")."""
from __future__ import annotations

from django.utils import timezone

from apps.accounting.stored import stored_answers
from apps.accounting.usage.workloads import workload_usage
from apps.recommendations.rightsizing.rows import RightsizeQuery, windows


def prepare_default_window(sender=None, **_kwargs) -> int:
    """`month_prepared` receiver: store each cluster's default window; how many were current or
    made so. A second month prepared by the same run finds them stored (one version read each)."""
    if not stored_answers():
        return 0
    read = windows(RightsizeQuery(), timezone.now())
    for cluster, window in read:
        workload_usage([cluster.pk], *window)
    return len(read)
