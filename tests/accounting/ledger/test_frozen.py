"""Frozen cells stored by the day, as columns (apps/accounting/ledger/frozen.py, migration 0013;
docs/performance.md, "Frozen cells stored by the day")."""
import importlib
from collections import Counter
from datetime import date
from types import SimpleNamespace

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Q

from apps.accounting.core.lines import Cell
from apps.accounting.ledger.frozen import booked_elsewhere, freeze_select, frozen_cells, carried_cells, unfreeze, write_cells
from apps.accounting.models import BillingPeriod, FrozenDay

pytestmark = pytest.mark.django_db

migration = importlib.import_module("apps.accounting.migrations.0013_frozen_days")


def cell(ns, day, g, *, team="A", u=0.0, i=0.0, m=0.0, cid=1, cluster="prod", model="NVIDIA H100 80GB HBM3",
         profile="", price_class="on_demand"):
    return Cell(cid, cluster, ns, team, model, profile, day, g, u, i, m, price_class)


@pytest.fixture
def months():
    return {p: BillingPeriod.objects.create(period=p) for p in ("2026-02", "2026-03")}


def as_tuples(cells):
    return Counter((c.cluster_id, c.cluster, c.namespace, c.team, c.gpu_model, c.mig_profile, c.price_class, c.day,
                    c.gpu_seconds, c.used_gpu_seconds, c.idle_gpu_seconds, c.mig_seconds) for c in cells)


def test_cells_written_by_the_day_come_back_as_they_went_in(months):
    feb, mar = months["2026-02"], months["2026-03"]
    own = [cell("ml", date(2026, 3, 1), 3600.0, u=0.1 + 0.2, i=0.1 + 0.7), cell("ml", date(2026, 3, 2), 7200.0),
           cell("nlp", date(2026, 3, 1), -0.0, team="B", m=1e-300, profile="1g.10gb", cid=2, cluster="lab"),
           cell("", date(2026, 3, 1), 5e15, team="", price_class="spot")]
    late = [cell("ml", date(2026, 2, 28), 1800.0)]
    assert write_cells([(mar.pk, mar.pk, c) for c in own] + [(feb.pk, mar.pk, c) for c in late]) == 5
    # One row per (month, statement, day): March's 1st and 2nd, February's 28th booked in March.
    assert FrozenDay.objects.count() == 3
    assert as_tuples(carried_cells(mar)) == as_tuples(own)
    assert as_tuples(carried_cells(feb)) == as_tuples(late)
    assert {(p, b) for p, b, _ in frozen_cells(Q(booked_in=mar))} == {("2026-03", "2026-03"), ("2026-02", "2026-03")}
    assert booked_elsewhere(feb) == ["2026-03"] and booked_elsewhere(mar) == []
    zero = next(c for c in carried_cells(mar) if c.namespace == "nlp").gpu_seconds
    assert str(zero) == "-0.0"                      # to the bit
    unfreeze(mar)
    assert not FrozenDay.objects.exists()


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="INSERT … SELECT array_agg is Postgres's")
def test_a_select_of_cells_is_frozen_in_the_database(months):
    mar = months["2026-03"]
    select = ("SELECT * FROM (VALUES (1::bigint, 'prod', 'ml', 'A', 'H100', '', 'on_demand', 3600.5::float8, "
              "0.25::float8, 1800::float8, 0::float8, '2026-03-01'::date), (1, 'prod', 'ml', 'A', 'H100', '', "
              "'on_demand', 7200, 1, 0, 0, '2026-03-02'), (2, 'lab', 'nlp', %s, 'A100', '1g.10gb', 'spot', 60, 0, 0, 60, "
              "'2026-03-01')) AS v(cluster_id_value, cluster, namespace, team, gpu_model, mig_profile, price_class, "
              "gpu_seconds, used_gpu_seconds, idle_gpu_seconds, mig_seconds, day)")
    freeze_select(select, ["B"], mar.pk)
    assert FrozenDay.objects.count() == 2
    assert as_tuples(carried_cells(mar)) == as_tuples([
        cell("ml", date(2026, 3, 1), 3600.5, u=0.25, i=1800.0, model="H100"),
        cell("ml", date(2026, 3, 2), 7200.0, u=1.0, model="H100"),
        cell("nlp", date(2026, 3, 1), 60.0, team="B", m=60.0, cid=2, cluster="lab", model="A100",
             profile="1g.10gb", price_class="spot")])


class Both:
    """The models a data migration sees between its CreateModel and its DeleteModel."""

    def __init__(self):
        loader = MigrationExecutor(connection).loader
        self.old = loader.project_state(("accounting", "0001_squashed_0012"), at_end=True).apps
        self.new = loader.project_state(("accounting", "0013_frozen_days"), at_end=True).apps

    def get_model(self, app, name):
        return (self.old if name == "FrozenCell" else self.new).get_model(app, name)


@pytest.mark.parametrize("vendor", ["postgresql", "sqlite"])
def test_the_migration_moves_frozen_cells_to_days_and_back(months, vendor):
    """`vendor` picks the migration's branch (the SQL copy or the portable one); both run on the
    test database, which must be Postgres: SQLite's schema editor cannot create the old table
    inside the test's transaction."""
    if connection.vendor != "postgresql":
        pytest.skip("the old table is created inside the test's transaction")
    apps = Both()
    FrozenCell = apps.get_model("accounting", "FrozenCell")
    feb, mar = months["2026-02"], months["2026-03"]
    rows = [(mar.pk, mar.pk, 1, "prod", "ml", "A", "H100", "", "on_demand", date(2026, 3, 1), 3600.0, 0.5, 0.0),
            (mar.pk, mar.pk, 1, "prod", "ml", "A", "H100", "", "on_demand", date(2026, 3, 2), 0.1 + 0.2, 0.0, 0.0),
            (mar.pk, mar.pk, 2, "lab", "nlp", "B", "A100", "1g.10gb", "spot", date(2026, 3, 1), 60.0, 0.0, 60.0),
            (feb.pk, mar.pk, 1, "prod", "ml", "A", "H100", "", "on_demand", date(2026, 2, 28), -0.0, 0.0, 0.0)]
    names = ("period_id", "booked_in_id", "cluster_id_value", "cluster", "namespace", "team", "gpu_model",
             "mig_profile", "price_class", "day", "gpu_seconds", "used_gpu_seconds", "mig_seconds")
    with connection.schema_editor() as editor:
        editor.create_model(FrozenCell)
    FrozenCell.objects.bulk_create([FrozenCell(**dict(zip(names, r))) for r in rows])
    editor = SimpleNamespace(connection=SimpleNamespace(vendor=vendor), execute=connection.cursor().execute)
    migration.cells_to_days(apps, editor)
    assert FrozenDay.objects.count() == 3
    expected = as_tuples(Cell(r[2], r[3], r[4], r[5], r[6], r[7], r[9], r[10], r[11], 0.0, r[12], r[8])
                         for r in rows[:3])
    assert as_tuples(carried_cells(mar)) == expected
    assert [c.gpu_seconds for c in carried_cells(feb)] == [-0.0] and str(carried_cells(feb)[0].gpu_seconds) == "-0.0"

    FrozenCell.objects.all().delete()
    migration.days_to_cells(apps, editor)
    assert sorted(FrozenCell.objects.values_list(*names)) == sorted(rows)
    with connection.schema_editor() as editor:
        editor.delete_model(FrozenCell)


def test_a_read_begun_inside_another_reads_its_own_days(months):
    """Each read declares its own cursor: one started inside another's loop runs to its end."""
    feb, mar = months["2026-02"], months["2026-03"]
    write_cells([(feb.pk, feb.pk, cell("ml", date(2026, 2, d), 60.0 * d)) for d in range(1, 29)]
                + [(mar.pk, mar.pk, cell("ml", date(2026, 3, d), 1.0)) for d in range(1, 32)])
    pairs = [(outer.day, len(carried_cells(mar))) for _, _, outer in frozen_cells(Q(period=feb))]
    assert pairs == [(date(2026, 2, d), 31) for d in range(1, 29)]
