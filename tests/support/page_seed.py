"""Hand-chosen rollup rows for the page tests; every figure the tests assert is computed from these.

Day D is two days ago (UTC), inside every page's default window (the last 7 days).
Cluster alpha (fresh), cluster beta (stale, its last ingest failed). Teams: vision (led by
`team_lead`) owns alpha/cv-train by the admin's mapping; nlp owns alpha/nlp-dev by label.

gpu0 H100  cv-train/train-0  10:00 3600 s used 2700 | 11:00 3600 s used 1800, idle 600   | 12:00 unallocated 3600 s
gpu1 H100  nlp-dev/notebook-0 10:00, 11:00 idle all hour (used 36 s each)                | 12:00 nlp-dev/short-0 used 180, 20 min idle
gpu2 A100 MIG 1g.10gb (1/7)  cv-train/mig-0 10:00: 3600/7 s, used half of it, 3600 MIG s
"""
from datetime import datetime, time, timedelta, timezone as dt_timezone

from django.utils import timezone

from apps.accounting.models import DeviceHealthHour, QuotaHour, UsageHour
from apps.clusters.models import Cluster, Device
from apps.ingest.models import IngestRun
from apps.teams.models import SINCE_EVER, Namespace, NamespaceAssignment, NamespaceLabel, Team
from tests.support.factories import A100, H100, make_role_users, usage_row
from tests.support.factories import make_cluster


def day_d():
    today = timezone.now().astimezone(dt_timezone.utc).date()
    return today - timedelta(days=2)


def at(hour):
    return datetime.combine(day_d(), time(hour), tzinfo=dt_timezone.utc)


def usage(device, ns, pod, hour, gpu_s, used_s=0.0, idle_s=0.0, **kw):
    """A saved row for `hour` o'clock of day D."""
    row = usage_row(device, ns, at(hour), pod=pod, gpu_seconds=gpu_s, used_gpu_seconds=used_s, idle_gpu_seconds=idle_s,
                    **kw)
    row.save(force_insert=True)
    return row


def seed():
    now = timezone.now()
    users = make_role_users(("admin", "finance", "team_lead", "viewer"))
    alpha = make_cluster("alpha", prometheus_url="http://127.0.0.1:9/", ingested_until=now - timedelta(hours=1))
    beta = make_cluster("beta", prometheus_url="http://127.0.0.1:9/", ingested_until=now - timedelta(hours=10))
    vision = Team.objects.create(name="vision")
    vision.members.add(users["team_lead"])
    Team.objects.create(name="nlp")
    cv = Namespace.objects.create(cluster=alpha, name="cv-train")
    NamespaceAssignment.objects.create(namespace=cv, team=vision, effective_from=day_d() - timedelta(days=30))
    nlp_dev = Namespace.objects.create(cluster=alpha, name="nlp-dev", label_team="nlp")
    NamespaceLabel.objects.create(namespace=nlp_dev, valid_from=SINCE_EVER, team_label="nlp")

    def device(uuid, host, idx, model, profile="", fraction=1.0, mig=""):
        return Device.objects.create(cluster=alpha, uuid=uuid, host=host, gpu_index=idx, model_name=model,
                                     mig_profile=profile, gpu_fraction=fraction, mig_instance_id=mig,
                                     first_seen=at(0), last_seen=at(23))
    gpu0 = device("GPU-0", "node-a", "0", H100)
    gpu1 = device("GPU-1", "node-a", "1", H100)
    gpu2 = device("GPU-2", "node-b", "0", A100, "1g.10gb", 1 / 7, "1")

    usage(gpu0, "cv-train", "train-0", 10, 3600, 2700, 0, energy_joules=3.6e6)
    usage(gpu0, "cv-train", "train-0", 11, 3600, 1800, 600, idle_prefix_seconds=0, idle_suffix_seconds=600,
          idle_max_run_seconds=600)
    usage(gpu0, "", "", 12, 3600)
    usage(gpu1, "nlp-dev", "notebook-0", 10, 3600, 36, 3600, idle_prefix_seconds=3600, idle_suffix_seconds=3600,
          idle_max_run_seconds=3600, idle_whole_hour=True, energy_joules=7.2e6)
    usage(gpu1, "nlp-dev", "notebook-0", 11, 3600, 36, 3600, idle_prefix_seconds=3600, idle_suffix_seconds=3600,
          idle_max_run_seconds=3600, idle_whole_hour=True)
    usage(gpu1, "nlp-dev", "short-0", 12, 3600, 180, 1200, idle_max_run_seconds=1200)
    usage(gpu2, "cv-train", "mig-0", 10, 3600 / 7, 3600 / 14, 0, mig_seconds=3600)

    DeviceHealthHour.objects.create(cluster=alpha, device=gpu0, hour_start=at(10), temperature_c_avg=80,
                                    temperature_c_max=86, seconds_above_83c=1200, power_watts_avg=600,
                                    energy_joules=2.16e6)
    DeviceHealthHour.objects.create(cluster=alpha, device=gpu1, hour_start=at(10), temperature_c_avg=55,
                                    temperature_c_max=60, power_watts_avg=120, energy_joules=4.32e5,
                                    xid_codes=[79], xid_samples=2)
    DeviceHealthHour.objects.create(cluster=alpha, device=gpu2, hour_start=at(10), temperature_c_avg=50,
                                    temperature_c_max=52, power_watts_avg=90, energy_joules=3.24e5)

    for hour, used, at_hard in ((10, 2, 0), (11, 4, 1800)):
        QuotaHour.objects.create(cluster=alpha, namespace="cv-train", resource="requests.nvidia.com/gpu",
                                 hour_start=at(hour), hard=4, used_max=used, seconds_at_hard=at_hard)

    IngestRun.objects.create(cluster=alpha, window_start=at(0), window_end=at(23), status="succeeded",
                             rows_written=7, finished_at=now, duration_seconds=1.5)
    IngestRun.objects.create(cluster=beta, window_start=at(0), window_end=at(6), status="failed",
                             error="Prometheus at http://127.0.0.1:9/ unreachable: connection refused",
                             warnings=["gap in DCGM series"], finished_at=now, duration_seconds=0.2)
    return {"users": users, "alpha": alpha, "beta": beta, "devices": (gpu0, gpu1, gpu2)}


def seed_week(days=7):
    """A livelier week for the README screenshot: 8 more GPUs, four namespaces, a daily rhythm.

    Deterministic (no randomness): utilization follows the hour of day and the namespace.
    """
    import math

    alpha = Cluster.objects.get(name="alpha")
    Team.objects.get_or_create(name="recsys")
    rec_prod, created = Namespace.objects.get_or_create(cluster=alpha, name="rec-prod", defaults={"label_team": "recsys"})
    if created:
        NamespaceLabel.objects.create(namespace=rec_prod, valid_from=SINCE_EVER, team_label="recsys")
    plan = [("cv-train", 0.72), ("cv-train", 0.55), ("nlp-dev", 0.04), ("nlp-dev", 0.35),
            ("rec-prod", 0.85), ("rec-prod", 0.6), ("sim", 0.25), ("", 0.0)]
    today = timezone.now().astimezone(dt_timezone.utc).date()
    rows, health = [], []
    for i, (ns, base) in enumerate(plan):
        model = A100 if i >= 6 else H100
        dev = Device.objects.create(cluster=alpha, uuid=f"GPU-W{i}", host=f"node-{'cd'[i // 4]}", gpu_index=str(i % 4),
                                    model_name=model, first_seen=at(0), last_seen=at(23))
        for d in range(days, 0, -1):
            day = today - timedelta(days=d)
            if day == day_d():
                continue
            for hour in range(24):
                start = datetime.combine(day, time(hour), tzinfo=dt_timezone.utc)
                busy = ns and (hour >= 7 or base > 0.5) and not (ns == "sim" and d % 3 == 0)
                util = max(0.0, min(1.0, base + 0.15 * math.sin((hour + i) / 3.0))) if busy else 0.0
                idle = 3600.0 if busy and util < 0.05 else 0.0
                rows.append(UsageHour(
                    cluster=alpha, device=dev, namespace=ns if busy else "", pod=f"{ns}-{i}" if busy else "",
                    hour_start=start, node=dev.host, gpu_model=model, gpu_fraction=1.0, sample_count=120,
                    gpu_seconds=3600.0, used_gpu_seconds=3600.0 * util if busy else 0.0, idle_gpu_seconds=idle,
                    idle_prefix_seconds=idle, idle_suffix_seconds=idle, idle_max_run_seconds=idle,
                    idle_whole_hour=idle > 0, energy_joules=3600.0 * (90 + 500 * util)))
                health.append(DeviceHealthHour(
                    cluster=alpha, device=dev, hour_start=start, temperature_c_avg=38 + 40 * util,
                    temperature_c_max=42 + 42 * util, power_watts_avg=90 + 500 * util,
                    energy_joules=3600.0 * (90 + 500 * util)))
    UsageHour.objects.bulk_create(rows)
    DeviceHealthHour.objects.bulk_create(health)


def seed_rates():
    """docs/figures.md's rates: H100 2.00 and A100 1.40 USD per GPU-hour (no MIG profile rate)."""
    from datetime import date
    from decimal import Decimal

    from apps.accounting.models import Rate

    for model, rate in ((H100, "2.00"), (A100, "1.40")):
        Rate.objects.create(gpu_model=model, hourly_rate=Decimal(rate), currency="USD", effective_from=date(2020, 1, 1))
