from django.core.management.base import BaseCommand, CommandError

from apps.accounting.calendar.parse import parse_window_options
from apps.clusters.models import Cluster
from apps.ingest.pipeline import IngestError
from apps.ingest.tasks import backfill_windows, ingest_cluster_window


class Command(BaseCommand):
    help = ("Ingest a long window one billing day at a time: in this process, or with --async as "
            "Celery tasks (one per cluster-day) that every worker sharing the Redis broker takes from.")

    def add_arguments(self, parser):
        parser.add_argument("--cluster", required=True, help="cluster name")
        parser.add_argument("--start", required=True, help="ISO 8601 instant or date; BILLING_TIMEZONE if no offset "
                                 "(docs/dates-and-money.md)")
        parser.add_argument("--end", required=True, help="ISO 8601 instant or date, exclusive")
        parser.add_argument("--async", dest="run_async", action="store_true",
                            help="queue one Celery task per day instead of running here")

    def handle(self, *args, **opts):
        try:
            start, end = parse_window_options(opts["start"], opts["end"])
        except ValueError as exc:
            raise CommandError(str(exc))
        cluster = Cluster.objects.filter(name=opts["cluster"]).first()
        if cluster is None:
            raise CommandError(f"no cluster named {opts['cluster']!r} (create it with `manage.py ingest`)")
        if cluster.archived:
            raise CommandError(f"cluster {cluster.name!r} is archived: it is no longer ingested (un-archive it in the admin)")
        try:
            windows = backfill_windows(cluster, start, end)
        except IngestError as exc:
            raise CommandError(str(exc))
        failed = 0
        for lo, hi in windows:
            if opts["run_async"]:
                ingest_cluster_window.delay(cluster.pk, lo.isoformat(), hi.isoformat(), "backfill")
                self.stdout.write(f"queued {cluster.name} {lo:%Y-%m-%d %H:%M}–{hi:%Y-%m-%d %H:%M}")
                continue
            try:
                run = ingest_cluster_window(cluster.pk, lo.isoformat(), hi.isoformat(), "backfill")
                self.stdout.write(f"{cluster.name} {lo:%Y-%m-%d %H:%M}–{hi:%Y-%m-%d %H:%M}: {run['rows']} rows")
            except IngestError as exc:
                failed += 1
                self.stderr.write(f"{cluster.name} {lo:%Y-%m-%d %H:%M}: {exc}")
        cluster.refresh_from_db()
        self.stdout.write(f"{len(windows)} day(s){' queued' if opts['run_async'] else ''}; "
                          f"watermark {cluster.ingested_until}")
        if failed:
            raise CommandError(f"{failed} day(s) failed; re-run the command for them")
