"""Seed a month of daily rollups for a large fleet straight into Postgres with COPY.

Shape: `gpus` GPUs on 8-GPU nodes over `clusters` clusters, `mig_share` of them split into
A100 MIG instances (3g.40gb + 2g.20gb + 2 × 1g.10gb); each device is held each day by one of
`namespaces` namespaces, split between the clusters (sticky: a namespace keeps to a few nodes) with probability
`occupancy`, else its seconds are unallocated. Namespaces belong to `teams` teams by label.
The rows are what ingest would write to UsageDay for such a fleet, so the readers' cost is
measured on the real table, its indexes and its row count.
"""
from __future__ import annotations

import random
from collections import defaultdict
from datetime import date, timedelta

from django.db import connection

from apps.accounting.models import UsageDay, UsageDayBuilt
from apps.clusters.models import Cluster
from apps.teams.models import SINCE_EVER, Namespace, NamespaceLabel

H100, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"
MIG_LAYOUT = (("3g.40gb", 3 / 7), ("2g.20gb", 2 / 7), ("1g.10gb", 1 / 7), ("1g.10gb", 1 / 7))
DAY_SECONDS = 86400.0


def _devices(gpus: int, mig_share: float, cluster_index: int):
    """(node, model, profile, fraction) per device of one cluster."""
    out = []
    nodes = -(-gpus // 8)
    mig_nodes = round(nodes * mig_share)
    for n in range(nodes):
        count = min(8, gpus - n * 8)
        if n < mig_nodes:
            host = f"c{cluster_index}-mig-{n:05d}"
            for _ in range(count):
                out.extend((host, A100, profile, fraction) for profile, fraction in MIG_LAYOUT)
        else:
            host = f"c{cluster_index}-gpu-{n:05d}"
            model = H100 if n % 2 else A100
            out.extend((host, model, "", 1.0) for _ in range(count))
    return out


def seed_month(first_day: date, days: int, gpus: int, namespaces: int, teams: int, clusters: int = 2,
               mig_share: float = 0.15, occupancy: float = 0.7, seed: int = 7) -> dict:
    rng = random.Random(seed)
    zone = "UTC"
    cluster_objs = [Cluster.objects.create(name=f"bench-{i}", prometheus_url="http://bench.invalid:9090")
                    for i in range(clusters)]
    per_cluster = max(1, namespaces // clusters)
    cluster_ns = [[f"ns-{ci}-{i:05d}" for i in range(per_cluster)] for ci in range(clusters)]
    created = Namespace.objects.bulk_create([
        Namespace(cluster=c, name=name, label_team=f"team-{(i * 7919 + ci) % teams:03d}")
        for ci, c in enumerate(cluster_objs) for i, name in enumerate(cluster_ns[ci])
    ], batch_size=5000)
    NamespaceLabel.objects.bulk_create([NamespaceLabel(namespace=n, valid_from=SINCE_EVER, team_label=n.label_team)
                                        for n in created], batch_size=5000)
    rows = 0
    table = UsageDay._meta.db_table
    cols = ("cluster_id", "day", "namespace", "gpu_model", "mig_profile", "node", "gpu_seconds",
            "used_gpu_seconds", "idle_gpu_seconds", "mig_seconds", "energy_joules", "sample_count", "hour_rows")
    with connection.cursor() as cur:
        raw = cur.cursor if hasattr(cur, "cursor") else cur
        for ci, cluster in enumerate(cluster_objs):
            devices = _devices(gpus // clusters, mig_share, ci)
            ns_names = cluster_ns[ci]
            # a namespace keeps to a neighbourhood of nodes: device i mostly goes to ns block i
            home = [ns_names[(i * len(ns_names)) // len(devices)] for i in range(len(devices))]
            for d in range(days):
                day = first_day + timedelta(days=d)
                cells: dict[tuple, list] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0.0, 0, 0])
                for i, (node, model, profile, fraction) in enumerate(devices):
                    allocated = rng.random() < occupancy
                    ns = (home[i] if rng.random() < 0.8 else rng.choice(ns_names)) if allocated else ""
                    acc = cells[(ns, model, profile, node)]
                    gpu_s = DAY_SECONDS * fraction
                    util = rng.random() if allocated else 0.0
                    acc[0] += gpu_s
                    acc[1] += gpu_s * util
                    acc[2] += gpu_s * (0.2 if util < 0.05 else 0.0)
                    acc[3] += DAY_SECONDS if profile else 0.0
                    acc[4] += 300.0 * DAY_SECONDS * fraction
                    acc[5] += 1440
                    acc[6] += 24
                with raw.copy(f"COPY {table} ({', '.join(cols)}) FROM STDIN") as copy:
                    for (ns, model, profile, node), v in cells.items():
                        copy.write_row((cluster.pk, day, ns, model, profile, node, *v))
                rows += len(cells)
    UsageDayBuilt.objects.bulk_create([
        UsageDayBuilt(cluster=c, day=first_day + timedelta(days=d), zone=zone)
        for c in cluster_objs for d in range(days)
    ])
    with connection.cursor() as cur:
        cur.execute(f"ANALYZE {table}")
    return {"usage_day_rows": rows, "clusters": clusters, "gpus": gpus, "namespaces": namespaces, "teams": teams,
            "days": days}
