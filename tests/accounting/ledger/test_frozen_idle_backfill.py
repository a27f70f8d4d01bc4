"""Migration accounting/0018_frozen_idle back-fills the idle seconds of days frozen before it
(docs/chargeback.md, "Windows across a close"): each cell of a month's own frozen day gets the
idle share of its day key's live hours when the migration runs; unallocated capacity none.

October: `ml` held an H100 10 h on 10 October, 3 of them idle; 2 unallocated hours that day; closed.
Then 2 late idle hours of the same day arrive. The close froze 3 h of idle; a day frozen before
the migration had none stored: back-filled from the live 12 h of which 5 idle, 10 × 5/12 h.
"""
import importlib

import pytest
from django.apps import apps as django_apps

from apps.accounting.actions.periods import do_close_period
from apps.accounting.models import FrozenDay

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_team, \
    make_usage, make_usage_hours, utc

pytestmark = pytest.mark.django_db
back_fill = importlib.import_module("apps.accounting.migrations.0018_frozen_idle").back_fill


def test_days_frozen_before_the_migration_get_the_idle_share_of_their_live_hours(finance):
    prod = make_cluster()
    make_team("research")
    make_namespace(prod, "ml", label_team="research")
    make_rate(hourly_rate="2.00")
    gpu = make_device(prod, host="n1")
    hours = [utc(2026, 10, 10, h) for h in range(10)]
    make_usage_hours(gpu, "ml", "pod-0", hours[:3], gpus=1, efficiency=0.0, idle_gpu_seconds=3600.0)
    make_usage_hours(gpu, "ml", "pod-0", hours[3:], gpus=1, efficiency=0.5)
    make_usage(make_device(prod, host="n2"), "", utc(2026, 10, 10), hours=2)
    do_close_period("2026-10", actor=finance)
    [day] = FrozenDay.objects.all()
    by_namespace = dict(zip(day.namespaces, day.idle_gpu_seconds))
    assert by_namespace == {"ml": 3 * 3600.0, "": 0.0}           # what the close read
    make_usage_hours(gpu, "ml", "late", [utc(2026, 10, 10, 20), utc(2026, 10, 10, 21)], gpus=1, efficiency=0.0,
                     idle_gpu_seconds=3600.0)

    FrozenDay.objects.update(idle_gpu_seconds=None)                # as frozen before the migration
    back_fill(django_apps, None)                                   # it uses no schema editor
    [day] = FrozenDay.objects.all()
    by_namespace = dict(zip(day.namespaces, day.idle_gpu_seconds))
    assert by_namespace["ml"] == pytest.approx(10 * 3600.0 * 5 / 12)
    assert by_namespace[""] == 0.0
