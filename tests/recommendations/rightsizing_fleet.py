"""Two days of workloads whose right-sizing is known by hand (tests/recommendations/test_rightsizing.py).

Rate card (EUR per hour, on demand): H100 4.00 and its 1g.10gb 0.60 of its own; A100 2.80
(no profile rates: a slice is 2.80 × slices/7); L4 0.70; L40S 1.40. Window: the 48 hours
before factories.END; every workload but `nb-idle` holds its GPU all 48 of them.
"""
from datetime import date
from decimal import Decimal

from apps.accounting.models import PodOwner, Rate

from tests.support import factories as f

L4 = "NVIDIA L4"
L40S = "NVIDIA L40S"
GIB = 1024.0


def owner(c, namespace, pod, kind, name, owner_kind=None, owner_name=None):
    return PodOwner.objects.create(cluster=c, namespace=namespace, pod=pod, owner_kind=owner_kind or kind,
                                   owner_name=owner_name or name, workload_kind=kind, workload_name=name,
                                   last_seen=f.END)


def rates():
    for model, profile, rate in ((f.H100, "", "4.00"), (f.H100, "1g.10gb", "0.60"), (f.A100, "", "2.80"),
                                 (L4, "", "0.70"), (L40S, "", "1.40")):
        Rate.objects.create(gpu_model=model, mig_profile=profile, price_class="on_demand", hourly_rate=Decimal(rate),
                            currency="EUR", effective_from=date(2026, 1, 1))


def build():
    c = f.make_cluster(ingested_until=f.END)
    hours = f.hours_before(f.END, 48)
    # ml/infer-small: a Deployment whose two pods (one a day) use 8 GiB of an H100 at 10 %
    dev = f.make_device(c, uuid="GPU-infer", model=f.H100)
    for pod, part in (("infer-small-5d8f-a", hours[:24]), ("infer-small-5d8f-b", hours[24:])):
        f.make_usage_hours(dev, "ml", pod, part, 1, efficiency=0.10, fb_used_mib_max=8 * GIB, fb_used_mib_avg=6 * GIB)
        owner(c, "ml", pod, "Deployment", "infer-small", "ReplicaSet", "infer-small-5d8f")
    # ml/peaky-0: a StatefulSet at 4 GiB, but 9,000 MiB in one hour: too much for 1g.10gb with room
    dev = f.make_device(c, uuid="GPU-peaky", model=f.H100)
    f.make_usage_hours(dev, "ml", "peaky-0", hours[:30], 1, efficiency=0.10, fb_used_mib_max=4 * GIB)
    f.make_usage_hours(dev, "ml", "peaky-0", hours[30:31], 1, efficiency=0.10, fb_used_mib_max=9000.0)
    f.make_usage_hours(dev, "ml", "peaky-0", hours[31:], 1, efficiency=0.10, fb_used_mib_max=4 * GIB)
    owner(c, "ml", "peaky-0", "StatefulSet", "peaky")
    # research/nb-erin: a notebook that held an A100 for the first 12 hours with a model loaded
    # (30 GiB) and 1 % activity, every second of it under the idle threshold: forgotten
    dev = f.make_device(c, uuid="GPU-nb", model=f.A100)
    f.make_usage_hours(dev, "research", "nb-erin-0", hours[:12], 1, efficiency=0.01, idle_gpu_seconds=3600.0,
            fb_used_mib_max=30 * GIB)
    owner(c, "research", "nb-erin-0", "Notebook", "nb-erin", "StatefulSet", "nb-erin")
    # search/l4-serve: an L4 at 10 % and 3,000 MiB: no MIG, a quarter share fits
    dev = f.make_device(c, uuid="GPU-l4", model=L4)
    f.make_usage_hours(dev, "search", "l4-serve-7c-x", hours, 1, efficiency=0.10, fb_used_mib_max=3000.0)
    owner(c, "search", "l4-serve-7c-x", "Deployment", "l4-serve", "ReplicaSet", "l4-serve-7c")
    # search/l40s-train: an L40S Job at 60 %: no MIG, too busy to share
    dev = f.make_device(c, uuid="GPU-l40s", model=L40S)
    f.make_usage_hours(dev, "search", "l40s-train-q", hours, 1, efficiency=0.60, fb_used_mib_max=20 * GIB)
    owner(c, "search", "l40s-train-q", "Job", "l40s-train")
    # search/embedder: already on an A100 3g.40gb slice, 20 % of it and 5,000 MiB: 1g.10gb fits
    mig3 = f.make_device(c, uuid="GPU-mig", model=f.A100, mig_profile="3g.40gb", fraction=3 / 7, instance="1")
    f.make_usage_hours(mig3, "search", "embedder-6b-z", hours, 3 / 7, efficiency=0.20, fb_used_mib_max=5000.0)
    owner(c, "search", "embedder-6b-z", "Deployment", "embedder", "ReplicaSet", "embedder-6b")
    # search/tiny: a bare pod (no owner) on the smallest A100 80 GB slice already
    mig1 = f.make_device(c, uuid="GPU-mig", model=f.A100, mig_profile="1g.10gb", fraction=1 / 7, instance="9")
    f.make_usage_hours(mig1, "search", "tiny", hours, 1 / 7, efficiency=0.30, fb_used_mib_max=2000.0)
    # ml/trainer: a Job whose pod holds two H100s: stays on whole GPUs
    for uuid in ("GPU-t0", "GPU-t1"):
        f.make_usage_hours(f.make_device(c, uuid=uuid, model=f.H100), "ml", "trainer-x", hours, 1, efficiency=0.05,
                fb_used_mib_max=2 * GIB)
    owner(c, "ml", "trainer-x", "Job", "trainer")
    teams = {team: f.assign(c, ns, team) for ns, team in (("ml", "vision"), ("research", "research"),
                                                            ("search", "search"))}
    return c, teams
