"""The bench's fleet seeder lives in the simulator, where `scripts/load.py` and `make bench` both
import it; it writes the month as ingest would (COPY, so Postgres)."""
import pytest
from datetime import date

from django.db.models import Sum

from apps.accounting.models import UsageDay, UsageDayBuilt
from apps.simulator.benchseed import seed_month

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_a_small_fleet_seeds_every_gpu_second_of_its_days():
    seeded = seed_month(date(2026, 3, 1), days=2, gpus=16, namespaces=4, teams=2, clusters=1,
                        mig_share=0.0, occupancy=1.0)
    # 16 whole GPUs (two 8-GPU nodes), every one held all day: 16 × 86,400 s = 1,382,400 s a day.
    per_day = {row["day"]: row["s"] for row in UsageDay.objects.values("day").annotate(s=Sum("gpu_seconds"))}
    assert per_day == {date(2026, 3, 1): 1_382_400.0, date(2026, 3, 2): 1_382_400.0}
    assert not UsageDay.objects.filter(namespace="").exists()        # occupancy 1: nothing unallocated
    assert UsageDayBuilt.objects.count() == 2
    assert seeded["usage_day_rows"] == UsageDay.objects.count()
