from django.core.management.base import BaseCommand, CommandError

from apps.simulator.exporter import COUNTERS, DEFAULT_COUNTERS, DEFAULT_VERSION, RELEASES
from apps.simulator.promserver import PrometheusUnavailable
from apps.simulator.run import run_simulate


class Command(BaseCommand):
    help = "Write a synthetic GPU cluster history (DCGM + kube-state-metrics), backfill it, optionally serve it."

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, help="directory for series.om and tsdb/")
        parser.add_argument("--hours", type=float, default=6)
        parser.add_argument("--interval", type=int, default=30, help="sample interval in seconds")
        parser.add_argument("--spelling", choices=["plain", "exported", "old"], default="plain")
        parser.add_argument("--hostname-label", choices=["Hostname", "hostname"], default=None,
                            help="default: the exporter version's spelling")
        parser.add_argument("--counters", choices=COUNTERS, default=DEFAULT_COUNTERS,
                            help="the dcgm-exporter counters file imitated (docs/demo.md)")
        parser.add_argument("--exporter-version", choices=list(RELEASES), default=DEFAULT_VERSION)
        parser.add_argument("--time-slicing", action="store_true")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--serve", action="store_true", help="run Prometheus in the foreground")
        parser.add_argument("--port", type=int, default=None)

    def handle(self, *args, **opts):
        try:
            run_simulate(opts["out"], hours=opts["hours"], interval_seconds=opts["interval"],
                         spelling=opts["spelling"], seed=opts["seed"], hostname_label=opts["hostname_label"],
                         time_slicing=opts["time_slicing"], serve=opts["serve"], port=opts["port"],
                         counters=opts["counters"], exporter_version=opts["exporter_version"],
                         stdout=self.stdout)
        except (PrometheusUnavailable, FileExistsError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
