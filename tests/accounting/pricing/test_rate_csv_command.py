"""manage.py import_rates: all rows or none, every bad row named by its line number."""
from datetime import date
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from apps.accounting.models import Rate
from apps.teams.models import AuditEvent

from tests.support.factories import H100, make_rate

pytestmark = pytest.mark.django_db
HEADER = "gpu_model,mig_profile,hourly_rate,currency,effective_from\n"
GOOD = f"{H100},,2.50,USD,2026-01-01\n"


def run(tmp_path, text):
    path = tmp_path / "rates.csv"
    path.write_text(text)
    call_command("import_rates", str(path))


def refused(tmp_path, text) -> str:
    before = Rate.objects.count()
    with pytest.raises(CommandError) as exc:
        run(tmp_path, text)
    assert Rate.objects.count() == before, "nothing may be imported from a bad file"
    return str(exc.value)


def test_good_file_imports_every_row_and_is_audited(tmp_path):
    run(tmp_path, HEADER.strip() + ",price_class\n" + f"{H100},,2.50,USD,2026-01-01,on_demand\n"
        f"{H100},1g.10gb,0.40,usd,2026-01-01,\n{H100},,0.90,USD,2026-01-01,spot\n")
    assert Rate.objects.count() == 3
    assert Rate.objects.get(mig_profile="1g.10gb").currency == "USD"
    assert Rate.objects.get(price_class="spot").hourly_rate == Decimal("0.90")
    event = AuditEvent.objects.get(action="rates.import")
    assert len(event.new_value) == 3


@pytest.mark.parametrize("text, message", [
    ("gpu_model,rate,currency,effective_from\n" + GOOD, "line 1: wrong header"),
    (HEADER + GOOD + f"{H100},,2.50,USD,2026-02-30\n", "line 3: effective_from '2026-02-30' is not a date"),
    (HEADER + GOOD + f"{H100},,2,50,USD,2026-02-01\n", "line 3: 6 columns; expected 5"),
    (HEADER + GOOD + f"{H100},,two,USD,2026-02-01\n", "line 3: hourly_rate 'two' is not a number"),
    (HEADER + GOOD + f"{H100},,-1.00,USD,2026-02-01\n", "line 3: hourly_rate '-1.00' is negative"),
    (HEADER + GOOD + f"{H100},,NaN,USD,2026-02-01\n", "line 3: hourly_rate 'NaN' is not a number"),
    (HEADER + GOOD + f"{H100},,1.00,XXY,2026-02-01\n", "line 3: currency 'XXY' is not an ISO 4217 code"),
    (HEADER + GOOD + GOOD, "line 3: duplicate rate for NVIDIA H100 80GB HBM3 (whole GPU) on_demand from "
                           "2026-01-01 (also on line 2)"),
    (HEADER.strip() + ",price_class\n" + f"{H100},,1.00,USD,2026-02-01,cheap\n",
     "line 2: price_class 'cheap' is not one of"),
])
def test_each_kind_of_bad_row_is_refused_with_its_line(tmp_path, text, message):
    assert message in refused(tmp_path, text)


def test_a_key_and_date_already_stored_is_refused(tmp_path):
    make_rate(hourly_rate="2.00", effective_from=date(2026, 1, 1))
    message = refused(tmp_path, HEADER + f"{H100},,2.10,USD,2026-02-01\n" + GOOD)
    assert "line 3: a rate for NVIDIA H100 80GB HBM3 (whole GPU) on_demand from 2026-01-01 already exists" in message
    assert Rate.objects.get().hourly_rate == Decimal("2.00")


def test_every_bad_line_is_listed(tmp_path):
    message = refused(tmp_path, HEADER + f"{H100},,x,USD,2026-02-01\n{H100},,1,EURO,2026-03-01\n")
    assert "line 2:" in message and "line 3:" in message


def test_the_readme_example_file_imports():
    from django.conf import settings
    call_command("import_rates", str(settings.BASE_DIR / "apps/accounting/fixtures/rates.example.csv"))
    assert Rate.objects.count() == 6
