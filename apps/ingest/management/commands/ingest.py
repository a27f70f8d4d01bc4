import sys

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import InterfaceError, OperationalError
from tqdm import tqdm

from apps.accounting.calendar.parse import parse_window_options
from apps.clusters.models import Cluster, validate_prometheus_url
from apps.ingest.pipeline import IngestError, database_failure, ingest


class Command(BaseCommand):
    help = "Pull a window of DCGM + kube-state-metrics data from Prometheus into the hourly rollups."
    # Run from cron and scripts, often: the project's checks are `manage.py check`'s and the
    # web's (0.4 s of every run's start-up: docs/performance.md, "Process start-up").
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--cluster", required=True,
                            help="cluster name; a new one is created by the first successful ingest")
        parser.add_argument("--prometheus-url", help="Prometheus base URL (required for a new cluster)")
        parser.add_argument("--start", required=True, help="ISO 8601 instant or date; BILLING_TIMEZONE if no offset "
                                 "(docs/dates-and-money.md)")
        parser.add_argument("--end", required=True, help="ISO 8601 instant or date, exclusive")
        parser.add_argument("--no-progress", action="store_true", help="do not draw the progress bar")
        parser.add_argument("--create", action="store_true",
                            help="keep a new cluster even when this first ingest fails (beat will retry it)")

    def handle(self, *args, **opts):
        try:
            self._handle(**opts)
        except (OperationalError, InterfaceError) as exc:   # the database itself is down or went away
            raise CommandError(database_failure(exc)) from None

    def _handle(self, **opts):
        try:
            start, end = parse_window_options(opts["start"], opts["end"])
        except ValueError as exc:
            raise CommandError(str(exc))
        cluster = Cluster.objects.filter(name=opts["cluster"]).first()
        url = opts.get("prometheus_url")
        created = cluster is None
        if cluster is None:
            if not url:
                raise CommandError(f"cluster {opts['cluster']!r} is new: give --prometheus-url")
            cluster = Cluster(name=opts["cluster"], prometheus_url=url)
            try:
                cluster.full_clean()
            except Exception as exc:
                raise CommandError(f"invalid cluster: {'; '.join(_messages(exc))}")
            cluster.save()
        elif cluster.archived:
            raise CommandError(f"cluster {cluster.name!r} is archived: it is no longer ingested (un-archive it in the admin)")
        elif url and url != cluster.prometheus_url:
            try:
                validate_prometheus_url(url)
            except ValidationError as exc:
                raise CommandError(f"invalid --prometheus-url: {'; '.join(exc.messages)}") from None
            cluster.prometheus_url = url
            cluster.save(update_fields=["prometheus_url"])

        bar = None
        if not opts["no_progress"]:
            bar = tqdm(total=None, unit="chunk", desc=f"ingest {cluster.name}", file=sys.stderr,
                       disable=None, leave=True)

        def progress(done, total):
            if bar is not None:
                bar.total = total
                bar.update(done - bar.n)

        try:
            run = ingest(cluster, start, end, trigger="command", progress=progress)
        except IngestError as exc:
            if bar is not None:
                bar.close()
            if created and not opts["create"]:
                # A cluster exists from its first success on (or with --create): a typo'd URL
                # or a dead Prometheus leaves nothing behind, its failed run included.
                cluster.delete()
                raise CommandError(f"{exc} (cluster {cluster.name!r} not created; --create keeps it)")
            raise CommandError(str(exc))
        if bar is not None:
            bar.close()
        self.stdout.write(
            f"ingested {cluster.name} {run.window_start:%Y-%m-%dT%H:%MZ} → {run.window_end:%Y-%m-%dT%H:%MZ}: "
            f"{run.rows_written} rows from {run.samples_read} samples in {run.duration_seconds:.1f}s"
        )
        for warning in run.warnings:
            self.stderr.write(f"warning: {warning}")


def _messages(exc):
    if hasattr(exc, "message_dict"):
        return [f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items()]
    return [str(exc)]
