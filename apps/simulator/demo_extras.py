"""Demo extras: the example rate card, so the demo shows money."""
from pathlib import Path

from django.core.management import call_command

from apps.accounting.models import Rate

RATES = Path(__file__).resolve().parents[1] / "accounting" / "fixtures" / "rates.example.csv"


def load_extras(log):
    if not Rate.objects.exists():
        call_command("import_rates", str(RATES))
        log(f"imported the example rate card {RATES.name}")
