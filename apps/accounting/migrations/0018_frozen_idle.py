"""Frozen days keep the idle seconds of their cells (docs/chargeback.md, "Windows across a close"):
a closed day's idle GPU-hours and idle cost are what its close read, not the idle share of the
day's live usage, which late hours of that day moved.

Back-fill of the days frozen before this migration, computed from the live hourly rows at
migration time as the close would have read them (the daily rollups of a cluster's day built in
the month's zone, else its hourly rows): each cell of a month's own frozen day gets the
idle share of its day key (cluster, namespace, GPU model, MIG profile, billing day in the zone the
month was closed in) — the key's idle seconds × the cell's seconds ÷ the key's seconds, at most
the cell's seconds; unallocated capacity and the adjustment rows a later close booked (late data,
which carries no idle) get none. Hours that arrived late for such a day before this migration are
in that share, as they were on the pages before it. Reversed, the column is dropped.
"""
import zoneinfo
from collections import defaultdict
from datetime import datetime, time, timedelta

import apps.accounting.models.columns
from django.conf import settings
from django.db import migrations
from django.db.models import Sum


def back_fill(apps, schema_editor):
    FrozenDay = apps.get_model("accounting", "FrozenDay")
    UsageHour = apps.get_model("accounting", "UsageHour")
    UsageDay, UsageDayBuilt = apps.get_model("accounting", "UsageDay"), apps.get_model("accounting", "UsageDayBuilt")
    for d in FrozenDay.objects.filter(idle_gpu_seconds__isnull=True).select_related("period").order_by("id") \
            .iterator(chunk_size=8):
        idle = [0.0] * len(d.gpu_seconds)
        if d.period_id == d.booked_in_id:
            zone = zoneinfo.ZoneInfo(d.period.billing_timezone or settings.BILLING_TIMEZONE)
            start = datetime.combine(d.day, time(), zone)
            end = datetime.combine(d.day + timedelta(days=1), time(), zone)
            keys = defaultdict(lambda: [0.0, 0.0])
            # As the readers do: the daily rollups of a (cluster, day) built in the month's zone,
            # the hourly rows of the others.
            built = list(UsageDayBuilt.objects.filter(day=d.day, zone=zone.key).values_list("cluster_id", flat=True))
            rows = [UsageDay.objects.filter(day=d.day, cluster_id__in=built),
                    UsageHour.objects.filter(hour_start__gte=start, hour_start__lt=end).exclude(cluster_id__in=built)]
            for qs in rows:
                for r in (qs.exclude(namespace="").values("cluster_id", "namespace", "gpu_model", "mig_profile")
                          .annotate(g=Sum("gpu_seconds"), i=Sum("idle_gpu_seconds"))):
                    s = keys[(r["cluster_id"], r["namespace"], r["gpu_model"], r["mig_profile"])]
                    s[0] += r["g"] or 0.0
                    s[1] += r["i"] or 0.0
            for n, key in enumerate(zip(d.cluster_ids, d.namespaces, d.gpu_models, d.mig_profiles)):
                gpu, key_idle = keys.get(key, (0.0, 0.0))
                if key[1] and gpu > 0:
                    idle[n] = min(d.gpu_seconds[n], d.gpu_seconds[n] * key_idle / gpu)
        d.idle_gpu_seconds = idle
        d.save(update_fields=["idle_gpu_seconds"])


class Migration(migrations.Migration):

    dependencies = [
        ('accounting', '0017_rate_imports'),
    ]

    operations = [
        migrations.AddField(
            model_name='frozenday',
            name='idle_gpu_seconds',
            field=apps.accounting.models.columns.ListColumn(null=True, of='double precision'),
        ),
        migrations.RunPython(back_fill, migrations.RunPython.noop, elidable=True),
    ]
