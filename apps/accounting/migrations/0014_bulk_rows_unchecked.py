"""The rows written in bulk no longer carry database foreign keys, nor an index of the cluster
alone where a unique index leads with it: ingest's hourly and daily rollups, pods' owners, the
stored answers' cells and lines, a closed statement's lines. Each is written by one module, in a
transaction holding its parent, and removed through Django's cascade or before its parent; a
deferred key was checked row by row at the commit (0.4 s of a 136-GPU, 72-hour ingest; 22,800
lines of a close). docs/performance.md, "Bulk writes"."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounting', '0013_frozen_days'),
        ('clusters', '0001_squashed_0007'),
    ]

    operations = [
        migrations.AlterField(
            model_name='devicehealthhour',
            name='cluster',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='clusters.cluster'),
        ),
        migrations.AlterField(
            model_name='devicehealthhour',
            name='device',
            field=models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='clusters.device'),
        ),
        migrations.AlterField(
            model_name='monthcell',
            name='answer',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounting.monthanswer'),
        ),
        migrations.AlterField(
            model_name='monthline',
            name='answer',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounting.monthanswer'),
        ),
        migrations.AlterField(
            model_name='podowner',
            name='cluster',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='clusters.cluster'),
        ),
        migrations.AlterField(
            model_name='queueddemandhour',
            name='cluster',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='clusters.cluster'),
        ),
        migrations.AlterField(
            model_name='quotahour',
            name='cluster',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='clusters.cluster'),
        ),
        migrations.AlterField(
            model_name='statementline',
            name='period',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='lines', to='accounting.billingperiod'),
        ),
        migrations.AlterField(
            model_name='usageday',
            name='cluster',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='clusters.cluster'),
        ),
        migrations.AlterField(
            model_name='usagedaybuilt',
            name='cluster',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='clusters.cluster'),
        ),
        migrations.AlterField(
            model_name='usagehour',
            name='cluster',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='clusters.cluster'),
        ),
        migrations.AlterField(
            model_name='usagehour',
            name='device',
            field=models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='clusters.device'),
        ),
    ]
