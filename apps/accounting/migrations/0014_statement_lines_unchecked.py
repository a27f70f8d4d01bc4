"""Statement lines' period no longer a database foreign key, nor indexed alone: only the close
writes lines, in its transaction holding the period's row, and a deferred key checked each of a
month's 22,800 lines at the commit (docs/performance.md, "Bulk writes"). The (period, team) index
serves every read by period."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounting', '0013_frozen_days'),
    ]

    operations = [
        migrations.AlterField(
            model_name='statementline',
            name='period',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='lines', to='accounting.billingperiod'),
        ),
    ]
