"""manage.py import_rates FILE.csv — all rows or none."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.accounting.actions.rates import do_import_rate_file
from apps.accounting.pricing.rate_csv import RateFileError


class Command(BaseCommand):
    help = "Import a rate card CSV: gpu_model,mig_profile,hourly_rate,currency,effective_from[,price_class]"

    def add_arguments(self, parser):
        parser.add_argument("file")

    def handle(self, *args, **opts):
        path = Path(opts["file"])
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc}")
        try:
            rates = do_import_rate_file(data, actor=None, source=str(path))
        except RateFileError as exc:
            raise CommandError(f"{path}: nothing imported:\n" + "\n".join(exc.errors))
        self.stdout.write(f"imported {len(rates)} rate(s) from {path}")
