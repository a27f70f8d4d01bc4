"""manage.py import_rates FILE.csv — all rows or none."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.accounting.actions import do_import_rates
from apps.accounting.models import PRICE_CLASSES, Rate
from apps.accounting.ratecsv import RateFileError, parse_rates


class Command(BaseCommand):
    help = "Import a rate card CSV: gpu_model,mig_profile,hourly_rate,currency,effective_from[,price_class]"

    def add_arguments(self, parser):
        parser.add_argument("file")

    def handle(self, *args, **opts):
        path = Path(opts["file"])
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {path}: {exc}")
        existing = set(Rate.objects.values_list("gpu_model", "mig_profile", "price_class", "effective_from"))
        try:
            entries = parse_rates(text, PRICE_CLASSES, existing)
        except RateFileError as exc:
            raise CommandError(f"{path}: nothing imported:\n" + "\n".join(exc.errors))
        do_import_rates(entries, actor=None, source=str(path))
        self.stdout.write(f"imported {len(entries)} rate(s) from {path}")
