"""The one bulk writer (apps/accounting/db/bulk.py) and the connection's work_mem
(docs/performance.md, "Bulk writes")."""
import os
import subprocess
import sys
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
from django.db import connection

from apps.accounting.db.bulk import insert_rows, upsert_rows
from apps.accounting.models import BillingPeriod, FrozenDay, StatementLine
from tests.support.factories import make_cluster

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.django_db
def test_rows_go_in_with_their_types_from_a_generator_and_are_counted():
    bp = BillingPeriod.objects.create(period="2026-10")
    rows = ((bp.pk, bp.pk, date(2026, 10, 1 + i), [7, 2**40], ["c1", "c2"], [f"ns-{i}", "é"], ["team-a", ""],
             ["NVIDIA A100-SXM4-80GB"] * 2, ["", "1g.10gb"], ["on_demand", "spot"], [3600.0 * (i + 1), -0.0],
             [0.1 + 0.2, 1e-300], [0.0, 5e15]) for i in range(3))
    written = insert_rows(FrozenDay, ("period_id", "booked_in_id", "day", "cluster_ids", "clusters", "namespaces",
                                      "teams", "gpu_models", "mig_profiles", "price_classes", "gpu_seconds",
                                      "used_gpu_seconds", "mig_seconds"), rows)
    assert written == 3
    got = list(FrozenDay.objects.order_by("day").values_list("day", "cluster_ids", "namespaces", "gpu_seconds",
                                                              "used_gpu_seconds"))
    # Floats arrive to the bit (0.1 + 0.2 is 0.30000000000000004, not 0.3), dates as dates, lists
    # as lists in their order.
    assert got == [(date(2026, 10, 1), [7, 2**40], ["ns-0", "é"], [3600.0, -0.0], [0.30000000000000004, 1e-300]),
                   (date(2026, 10, 2), [7, 2**40], ["ns-1", "é"], [7200.0, -0.0], [0.30000000000000004, 1e-300]),
                   (date(2026, 10, 3), [7, 2**40], ["ns-2", "é"], [10800.0, -0.0], [0.30000000000000004, 1e-300])]
    assert str(got[0][3][1]) == "-0.0"
    assert insert_rows(FrozenDay, ("period_id",), iter(())) == 0


@pytest.mark.django_db
def test_an_upsert_inserts_new_rows_and_replaces_the_others_fields_of_stored_ones():
    from datetime import datetime, timezone

    from apps.accounting.models import PodOwner

    prod, other = (make_cluster(n, prometheus_url="http://p:9090") for n in ("prod", "other"))
    seen = [datetime(2026, 3, d, tzinfo=timezone.utc) for d in (1, 2)]
    fields = ("cluster_id", "namespace", "pod", "owner_kind", "owner_name", "workload_kind", "workload_name",
              "last_seen")
    assert upsert_rows(PodOwner, fields, [(prod.pk, "ml", "a", "ReplicaSet", "rs-1", "Deployment", "train", seen[0]),
                                          (other.pk, "ml", "a", "Job", "j", "Job", "j", seen[0])],
                       unique=("cluster_id", "namespace", "pod")) == 2
    assert upsert_rows(PodOwner, fields, [(prod.pk, "ml", "a", "ReplicaSet", "rs-2", "Deployment", "serve", seen[1]),
                                          (prod.pk, "ml", "b", "", "b", "Pod", "b", seen[1])],
                       unique=("cluster_id", "namespace", "pod")) == 2
    assert upsert_rows(PodOwner, fields, [], unique=("cluster_id", "namespace", "pod")) == 0
    got = sorted(PodOwner.objects.values_list("cluster__name", "pod", "owner_name", "workload_name", "last_seen"))
    assert got == [("other", "a", "j", "j", seen[0]), ("prod", "a", "rs-2", "serve", seen[1]),
                   ("prod", "b", "b", "b", seen[1])]


@pytest.mark.django_db
def test_money_keeps_its_decimals():
    bp = BillingPeriod.objects.create(period="2026-10")
    insert_rows(StatementLine, ("period_id", "kind", "adjusts_period", "team", "cluster", "namespace", "gpu_model",
                                "mig_profile", "price_class", "rate_basis", "hourly_rate", "currency",
                                "allocated_gpu_seconds", "used_gpu_seconds", "billed_seconds", "cost"),
                [(bp.pk, "usage", "", "team-a", "c1", "ns", "NVIDIA A100-SXM4-80GB", "", "on_demand", "gpu",
                  Decimal("2.125"), "USD", 7200.0, 3600.0, 7200.0, Decimal("4.25"))])
    line = StatementLine.objects.get()
    assert (line.hourly_rate, line.cost, line.billed_seconds) == (Decimal("2.125"), Decimal("4.25"), 7200.0)


@pytest.mark.django_db
def test_portal_connections_sort_a_month_in_memory():
    if connection.vendor != "postgresql":
        pytest.skip("a Postgres setting")
    with connection.cursor() as cur:
        cur.execute("SHOW work_mem")
        assert cur.fetchone()[0] == "64MB"


def test_a_work_mem_that_is_not_a_size_stops_start_up():
    env = dict(os.environ, DATABASE_WORK_MEM="lots", DATABASE_URL="postgres://postgres@127.0.0.1:5432/unused",
               DJANGO_SETTINGS_MODULE="gpuportal.settings", DEBUG="true")
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        "django.core.exceptions.ImproperlyConfigured: DATABASE_WORK_MEM='lots' is not a size such as 64MB "
        "(kB, MB or GB)")
