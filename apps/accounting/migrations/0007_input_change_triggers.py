"""Postgres triggers that log every change to an input of a month's answer (docs/performance.md).

Statement-level AFTER triggers with transition tables: one small INSERT per statement, however
many rows it wrote (ingest's COPY included). Usage tables log each date they touched; the other
inputs log one undated row, and only when a column the answers read actually changed (ingest
updates `ingested_until` and `label_seen_at` on every run; those change no answer). SQLite (the
demo) has none of this: there month answers are computed live on every read.
"""
from django.db import migrations

# The declaration lives in apps/accounting/answer_inputs.py; every later `migrate` re-syncs the
# triggers with it (answer_inputs.sync_triggers), so this migration only creates the first set.
from apps.accounting.answer_inputs import drops, statements


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for sql in statements():
        schema_editor.execute(sql, params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for sql in drops():
        schema_editor.execute(sql, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("accounting", "0006_month_answers"),
        ("teams", "0006_teams_for_label_values"),
        ("clusters", "0007_change_history"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
