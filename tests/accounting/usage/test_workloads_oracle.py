"""Right-sizing's usage per workload (`usage/workloads.py`, docs/advice-and-alerts.md,
"Right-sizing") against a plain Python reading of the same hourly rows, over random fleets: pods
of one workload sharing hours, a pod holding two GPUs in an hour, MIG slices, hours without a
framebuffer reading, rows outside the window, unallocated rows and empty hours left out, and a
namespace filter. The statement is written by hand for speed (docs/performance.md, "The longest
reads"); this is what keeps it the rule."""
import random
from collections import defaultdict
from datetime import timedelta

import pytest

from apps.accounting.core.measures import percentile
from apps.accounting.models import PodOwner, UsageHour
from apps.accounting.usage.workloads import computed_workload_usage

from tests.support.factories import make_cluster, make_device, usage_row, utc

pytestmark = pytest.mark.django_db

T0 = utc(2026, 10, 5)


def oracle(cluster_ids, start, end, namespaces=None) -> dict:
    """Each workload's figures, read row by row in Python."""
    owners = {(o.cluster_id, o.namespace, o.pod): (o.workload_kind, o.workload_name) for o in PodOwner.objects.all()}
    groups = defaultdict(list)
    for r in UsageHour.objects.filter(cluster_id__in=cluster_ids, hour_start__gte=start, hour_start__lt=end):
        if r.gpu_seconds <= 0 or r.namespace == "" or (namespaces is not None and r.namespace not in namespaces):
            continue
        kind, name = owners.get((r.cluster_id, r.namespace, r.pod), ("Pod", r.pod))
        groups[(r.cluster_id, r.namespace, kind, name, r.gpu_model, r.mig_profile)].append(r)
    out = {}
    for key, rows in groups.items():
        fb = [r.fb_used_mib_max for r in rows if r.fb_used_mib_max is not None]
        out[key] = {
            "gpu_fraction": max(r.gpu_fraction for r in rows), "pods": len({r.pod for r in rows}),
            "first_hour": min(r.hour_start for r in rows), "hours": len({r.hour_start for r in rows}),
            "pod_hours": len({(r.pod, r.hour_start) for r in rows}), "device_hours": len(rows),
            "gpu_seconds": sum(r.gpu_seconds for r in rows), "used_gpu_seconds": sum(r.used_gpu_seconds for r in rows),
            "idle_gpu_seconds": sum(r.idle_gpu_seconds for r in rows), "mig_seconds": sum(r.mig_seconds for r in rows),
            "activity_p95": percentile([r.used_gpu_seconds / r.gpu_seconds for r in rows], 0.95),
            "fb_hours": len(fb), "fb_peak_mib": max(fb) if fb else None,
            "fb_p95_mib": percentile(fb, 0.95) if fb else None,
        }
    return out


def random_fleet(rng: random.Random):
    clusters = [make_cluster(f"w{i}", ingested_until=T0 + timedelta(days=3)) for i in range(2)]
    rows, owners = [], []
    for cluster in clusters:
        devices = [make_device(cluster, host=f"n{i // 4}") for i in range(6)]
        devices += [make_device(cluster, host="mig", mig_profile=rng.choice(["1g.10gb", "3g.40gb"]),
                                fraction=rng.choice([1 / 7, 3 / 7])) for _ in range(2)]
        for p in range(rng.randint(4, 9)):
            namespace, pod = rng.choice(["ml", "web", "batch"]), f"pod-{p}"
            if rng.random() < 0.6:    # owned: two or three pods of one workload often share a name
                owners.append(PodOwner(cluster=cluster, namespace=namespace, pod=pod, owner_kind="ReplicaSet",
                                       owner_name="rs", workload_kind=rng.choice(["Deployment", "Job"]),
                                       workload_name=f"w{p % 3}", last_seen=T0))
            first = rng.randint(-6, 40)
            held = rng.sample(devices, rng.choice([1, 1, 2]))      # a pod on two GPUs at once
            for hour in range(first, first + rng.randint(1, 30)):
                for device in held:
                    seconds = rng.choice([3600.0, 1800.0, 60.0, 0.0]) * device.gpu_fraction
                    rows.append(usage_row(
                        device, namespace, T0 + timedelta(hours=hour), pod=pod, gpu_seconds=seconds,
                        used_gpu_seconds=seconds * rng.random(), idle_gpu_seconds=seconds * rng.random() / 2,
                        mig_seconds=seconds / device.gpu_fraction if device.mig_profile else 0.0,
                        fb_used_mib_max=None if rng.random() < 0.3 else float(rng.randint(0, 80000))))
        # an unallocated row: never a workload's
        rows.append(usage_row(devices[0], "", T0 + timedelta(hours=2), pod="", gpu_seconds=3600.0))
    UsageHour.objects.bulk_create(rows, ignore_conflicts=True)
    PodOwner.objects.bulk_create(owners, ignore_conflicts=True)
    return [c.pk for c in clusters]


def figures(u) -> dict:
    return {k: getattr(u, k) for k in ("gpu_fraction", "pods", "first_hour", "hours", "pod_hours", "device_hours",
                                       "gpu_seconds", "used_gpu_seconds", "idle_gpu_seconds", "mig_seconds",
                                       "activity_p95", "fb_hours", "fb_peak_mib", "fb_p95_mib")}


@pytest.mark.parametrize("seed", range(6))
def test_workload_usage_is_the_rows_read_one_by_one(seed):
    rng = random.Random(seed)
    ids = random_fleet(rng)
    start, end = T0, T0 + timedelta(hours=rng.randint(12, 60))
    for namespaces in (None, {"ml", "batch"}):
        expected = oracle(ids, start, end, namespaces)
        got = {(u.cluster_id, u.namespace, u.workload_kind, u.workload_name, u.gpu_model, u.mig_profile): figures(u)
               for u in computed_workload_usage(ids, start, end, namespaces)}
        assert got.keys() == expected.keys()
        assert expected, "the fleet has workloads in the window"
        for key, want in expected.items():
            for name, value in want.items():
                assert got[key][name] == (value if value is None or name == "first_hour"
                                          else pytest.approx(value, rel=1e-9)), (key, name)


def test_a_hand_computed_workload():
    """Two pods of one Deployment: pod a on two GPUs for hour 0, pod b on one for hours 0 and 1.
    Rows (a,g1,0) 3600 s 25 % used, (a,g2,0) 3600 s 75 %, (b,g3,0) 3600 s 50 %, (b,g3,1) 1800 s
    100 %. Distinct hours 2, (pod, hour) pairs 3, device-hours 4; activities 0.25, 0.5, 0.75, 1.0
    whose P95 (type 7) is 0.75 + 0.85 × 0.25 = 0.9625."""
    cluster = make_cluster("hand", ingested_until=T0 + timedelta(days=1))
    g1, g2, g3 = (make_device(cluster, host="n1") for _ in range(3))
    UsageHour.objects.bulk_create([
        usage_row(g1, "ml", T0, pod="a", gpu_seconds=3600.0, used_gpu_seconds=900.0, fb_used_mib_max=1000.0),
        usage_row(g2, "ml", T0, pod="a", gpu_seconds=3600.0, used_gpu_seconds=2700.0),
        usage_row(g3, "ml", T0, pod="b", gpu_seconds=3600.0, used_gpu_seconds=1800.0, fb_used_mib_max=3000.0),
        usage_row(g3, "ml", T0 + timedelta(hours=1), pod="b", gpu_seconds=1800.0, used_gpu_seconds=1800.0),
    ])
    for pod in ("a", "b"):
        PodOwner.objects.create(cluster=cluster, namespace="ml", pod=pod, owner_kind="ReplicaSet", owner_name="rs",
                                workload_kind="Deployment", workload_name="train", last_seen=T0)
    [u] = computed_workload_usage([cluster.pk], T0, T0 + timedelta(hours=2))
    assert (u.workload_kind, u.workload_name, u.pods, u.hours, u.pod_hours, u.device_hours) == \
        ("Deployment", "train", 2, 2, 3, 4)
    assert u.devices_per_pod == pytest.approx(4 / 3)
    assert (u.gpu_seconds, u.used_gpu_seconds, u.first_hour) == (12600.0, 7200.0, T0)
    assert u.activity_p95 == pytest.approx(0.9625)
    # framebuffer peaks 1000 and 3000: P95 = 1000 + 0.95 × 2000
    assert (u.fb_hours, u.fb_peak_mib, u.fb_p95_mib) == (2, 3000.0, pytest.approx(2900.0))
