"""The daily advice snapshot: what the advice was, per resource, so it can be compared over time."""
from django.db import transaction
from django.utils import timezone

from apps.accounting.calendar.zone import billing_zone
from apps.clusters.models import Cluster
from apps.teams.models import AuditEvent

from .advice import AdviceQuery, advice_rows, params_from_settings
from .models import RecommendationSnapshot


def do_snapshot_recommendations(now=None, rate_fn=None) -> int:
    """Upsert today's snapshot rows (a re-run the same day overwrites them); one audit row."""
    now = now or timezone.now()
    day = now.astimezone(billing_zone()).date()
    params = params_from_settings()
    rows = advice_rows(AdviceQuery(now=now), rate_fn=rate_fn, with_assessments=True)
    cluster_ids = dict(Cluster.objects.values_list("name", "id"))
    written = 0
    with transaction.atomic():
        for row in rows:
            for a in row["_assessments"]:
                e = a.estimate
                RecommendationSnapshot.objects.update_or_create(
                    cluster_id=cluster_ids[row["cluster"]], kind=row["kind"], name=row["name"],
                    resource=a.resource, day=day,
                    defaults=dict(
                        window_days=params.window_days, history_hours=e.hours, hard=a.hard,
                        p50=e.p50, p90=e.p90, p95=e.p95, target=e.target, lower_bound=e.lower_bound,
                        upper_bound=e.upper_bound, verdict=a.verdict, reason=a.reason,
                        monthly_money_at_stake=a.monthly_money_at_stake, currency=a.currency or "",
                    ),
                )
                written += 1
        AuditEvent.objects.create(action="advice.snapshot", target=day.isoformat(), new_value={"rows": written})
    return written
