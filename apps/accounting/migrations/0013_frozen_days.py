"""Frozen cells stored by the day, as columns: one `FrozenDay` row holds a day's cells of one
(month, statement) pair, where a `FrozenCell` row held one cell. A close of a 10,000-GPU month
writes 31 rows instead of 230,000 (docs/performance.md, "Frozen cells stored by the day").

The cells already frozen are copied over, in the order they were written, before the old table
is dropped; reversed, they are copied back cell by cell.
"""
import apps.accounting.models.columns
import django.db.models.deletion
from django.db import migrations, models

LISTS = ("cluster_ids", "clusters", "namespaces", "teams", "gpu_models", "mig_profiles", "price_classes",
         "gpu_seconds", "used_gpu_seconds", "mig_seconds")
CELL = ("cluster_id_value", "cluster", "namespace", "team", "gpu_model", "mig_profile", "price_class",
        "gpu_seconds", "used_gpu_seconds", "mig_seconds")
RANGE_INDEXED = ("period_id", "booked_in_id")


def storage_and_indexes(apps, schema_editor):
    """On Postgres the lists are stored out of line uncompressed (compressing them cost a close a
    third more time than the space was worth) and found by block-range indexes (a close appends
    its days together); elsewhere (the demo's SQLite), plain indexes."""
    postgres = schema_editor.connection.vendor == "postgresql"
    if postgres:
        schema_editor.execute("ALTER TABLE accounting_frozenday "
                              + ", ".join(f"ALTER COLUMN {c} SET STORAGE EXTERNAL" for c in LISTS), params=None)
    for column in RANGE_INDEXED:
        using, options = (" USING brin", " WITH (pages_per_range = 4, autosummarize = on)") if postgres else ("", "")
        schema_editor.execute(f"CREATE INDEX accounting_frozenday_{column}_range ON accounting_frozenday"
                              f"{using} ({column}){options}", params=None)


def drop_indexes(apps, schema_editor):
    for column in RANGE_INDEXED:
        schema_editor.execute(f"DROP INDEX IF EXISTS accounting_frozenday_{column}_range", params=None)


def cells_to_days(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        lists = ", ".join(f"array_agg({c} ORDER BY id)" for c in CELL)
        schema_editor.execute(f"INSERT INTO accounting_frozenday (period_id, booked_in_id, day, {', '.join(LISTS)}) "
                              f"SELECT period_id, booked_in_id, day, {lists} FROM accounting_frozencell "
                              "GROUP BY period_id, booked_in_id, day", params=None)
        return
    FrozenCell, FrozenDay = apps.get_model("accounting", "FrozenCell"), apps.get_model("accounting", "FrozenDay")
    key, values = None, []

    def flush():
        if values:
            FrozenDay.objects.create(period_id=key[0], booked_in_id=key[1], day=key[2],
                                     **{name: list(column) for name, column in zip(LISTS, zip(*values))})

    rows = FrozenCell.objects.order_by("period_id", "booked_in_id", "day", "id").values_list(
        "period_id", "booked_in_id", "day", *CELL)
    for period_id, booked_in_id, day, *cell in rows.iterator(chunk_size=5000):
        if (period_id, booked_in_id, day) != key:
            flush()
            key, values = (period_id, booked_in_id, day), []
        values.append(cell)
    flush()


def days_to_cells(apps, schema_editor):
    FrozenCell, FrozenDay = apps.get_model("accounting", "FrozenCell"), apps.get_model("accounting", "FrozenDay")
    for d in FrozenDay.objects.order_by("id").iterator(chunk_size=8):
        FrozenCell.objects.bulk_create(
            [FrozenCell(period_id=d.period_id, booked_in_id=d.booked_in_id, day=d.day, **dict(zip(CELL, cell)))
             for cell in zip(*(getattr(d, name) for name in LISTS))], batch_size=2000)


class Migration(migrations.Migration):

    dependencies = [
        ('accounting', '0001_squashed_0012'),
    ]

    operations = [
        migrations.CreateModel(
            name='FrozenDay',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('day', models.DateField()),
                ('cluster_ids', apps.accounting.models.columns.ListColumn(of='bigint')),
                ('clusters', apps.accounting.models.columns.ListColumn(of='text')),
                ('namespaces', apps.accounting.models.columns.ListColumn(of='text')),
                ('teams', apps.accounting.models.columns.ListColumn(of='text')),
                ('gpu_models', apps.accounting.models.columns.ListColumn(of='text')),
                ('mig_profiles', apps.accounting.models.columns.ListColumn(of='text')),
                ('price_classes', apps.accounting.models.columns.ListColumn(of='text')),
                ('gpu_seconds', apps.accounting.models.columns.ListColumn(of='double precision')),
                ('used_gpu_seconds', apps.accounting.models.columns.ListColumn(of='double precision')),
                ('mig_seconds', apps.accounting.models.columns.ListColumn(of='double precision')),
                ('booked_in', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='booked_days', to='accounting.billingperiod')),
                ('period', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='frozen_days', to='accounting.billingperiod')),
            ],
        ),
        migrations.RunPython(storage_and_indexes, drop_indexes),
        migrations.RunPython(cells_to_days, days_to_cells),
        migrations.DeleteModel(
            name='FrozenCell',
        ),
    ]
