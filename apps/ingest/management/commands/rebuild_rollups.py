from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import Max, Min

from apps.accounting.models import UsageHour
from apps.accounting.calendar.parse import parse_instant
from apps.clusters.models import Cluster
from apps.accounting.calendar.zone import days_touched
from apps.accounting.usage.daily import rebuild_days
from apps.ingest.pipeline import IngestBusy, cluster_lock
from apps.teams.models import AuditEvent


class Command(BaseCommand):
    help = ("Recompute the daily usage rollups (UsageDay, and the per-pod day summary UsagePodDay) from the "
            "hourly rows, per billing day (BILLING_TIMEZONE). Run it after changing BILLING_TIMEZONE, and once "
            "after migration accounting 0019 (pod_days) to build the summary for the hours already stored.")

    def add_arguments(self, parser):
        parser.add_argument("--cluster", help="cluster name (default: every cluster)")
        parser.add_argument("--start", help="ISO 8601 date or instant (default: the first hourly row)")
        parser.add_argument("--end", help="ISO 8601 date or instant, exclusive (default: after the last hourly row)")

    def handle(self, *args, **opts):
        clusters = Cluster.objects.order_by("name")
        if opts["cluster"]:
            clusters = clusters.filter(name=opts["cluster"])
            if not clusters.exists():
                raise CommandError(f"no cluster named {opts['cluster']!r}")
        try:
            start = parse_instant(opts["start"], name="--start") if opts["start"] else None
            end = parse_instant(opts["end"], name="--end") if opts["end"] else None
        except ValueError as exc:
            raise CommandError(str(exc))
        for cluster in clusters:
            span = UsageHour.objects.filter(cluster=cluster).aggregate(lo=Min("hour_start"), hi=Max("hour_start"))
            lo = start or span["lo"]
            hi = end or (span["hi"] and span["hi"] + timedelta(hours=1))
            if lo is None or hi is None or hi <= lo:
                self.stdout.write(f"{cluster.name}: no hourly rows in range")
                continue
            days = days_touched(lo, hi)
            try:
                with cluster_lock(cluster.pk), transaction.atomic():
                    rows = rebuild_days(cluster.pk, days)
                    AuditEvent.objects.create(actor=None, action="rebuild_rollups", target=f"cluster:{cluster.name}",
                                              old_value={}, new_value={"first_day": days[0].isoformat(),
                                                                       "last_day": days[-1].isoformat(),
                                                                       "rows": rows})
            except IngestBusy as exc:
                raise CommandError(str(exc))
            self.stdout.write(f"{cluster.name}: {len(days)} day(s) {days[0]}..{days[-1]}, {rows} daily rows")
