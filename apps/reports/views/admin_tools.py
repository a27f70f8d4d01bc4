from apps.ingest.models import IngestRun

from ..data.overview import ingest_freshness
from .common import page, report_view

RUN_LIMIT = 200


@report_view(admin_only=True)
def ingest_log(request, sel):
    runs = IngestRun.objects.select_related("cluster").order_by("-started_at")
    if sel.cluster:
        runs = runs.filter(cluster__name=sel.cluster)
    status = request.GET.get("status") or ""
    if status:
        runs = runs.filter(status=status)
    return page(request, sel, "reports/ingest_log.html", "ingest", {
        "runs": list(runs[:RUN_LIMIT]), "limit": RUN_LIMIT, "status": status,
        "statuses": IngestRun.Status.values, "freshness": [f for f in ingest_freshness() if not sel.cluster or f.cluster == sel.cluster],
    })
