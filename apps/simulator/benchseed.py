"""The bench's fleet (`make bench`, `make load`): a month of daily rollups for a large fleet, seeded
straight into Postgres with COPY.

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
from datetime import date, datetime, timedelta, timezone

from django.db import connection
from django.db.models import Q

from apps.accounting.models import UsageDay, UsageDayBuilt, UsageHour
from apps.clusters.models import Cluster, Device
from apps.teams.models import SINCE_EVER, Namespace, NamespaceLabel, Team

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
    # As ingest does on a trusted cluster: every label value is a team with its page.
    Team.objects.bulk_create([Team(name=name) for name in sorted({n.label_team for n in created})],
                             ignore_conflicts=True)
    fleet = Fleet(rng, cluster_objs, cluster_ns, gpus, mig_share)
    rows = fleet.seed_days(first_day, days, occupancy)
    return {"usage_day_rows": rows, "clusters": clusters, "gpus": gpus, "namespaces": namespaces, "teams": teams,
            "days": days, "fleet": fleet}


class Fleet:
    """The seeded clusters' devices and namespaces, to seed more days or an hour of ingest."""

    def __init__(self, rng, clusters, cluster_ns, gpus, mig_share):
        self.rng, self.clusters, self.cluster_ns = rng, clusters, cluster_ns
        self.devices = [_devices(gpus // len(clusters), mig_share, ci) for ci in range(len(clusters))]
        # a namespace keeps to a neighbourhood of nodes: device i mostly goes to ns block i
        self.home = [[ns[(i * len(ns)) // len(devs)] for i in range(len(devs))]
                     for ns, devs in zip(cluster_ns, self.devices)]

    def _holder(self, ci, i, occupancy):
        allocated = self.rng.random() < occupancy
        ns = (self.home[ci][i] if self.rng.random() < 0.8 else self.rng.choice(self.cluster_ns[ci])) if allocated else ""
        return ns, (self.rng.random() if allocated else 0.0)

    def seed_days(self, first_day: date, days: int, occupancy: float = 0.7) -> int:
        """Daily rollups of `days` days from `first_day`, marked rolled up (UTC), by COPY."""
        rows = 0
        table = UsageDay._meta.db_table
        cols = ("cluster_id", "day", "namespace", "gpu_model", "mig_profile", "node", "gpu_seconds",
                "used_gpu_seconds", "idle_gpu_seconds", "mig_seconds", "energy_joules", "sample_count", "hour_rows")
        with connection.cursor() as cur:
            raw = cur.cursor if hasattr(cur, "cursor") else cur
            for ci, cluster in enumerate(self.clusters):
                for d in range(days):
                    day = first_day + timedelta(days=d)
                    cells: dict[tuple, list] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0.0, 0, 0])
                    for i, (node, model, profile, fraction) in enumerate(self.devices[ci]):
                        ns, util = self._holder(ci, i, occupancy)
                        acc = cells[(ns, model, profile, node)]
                        gpu_s = DAY_SECONDS * fraction
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
            UsageDayBuilt(cluster=c, day=first_day + timedelta(days=d), zone="UTC")
            for c in self.clusters for d in range(days)
        ])
        with connection.cursor() as cur:
            cur.execute(f"ANALYZE {table}")
        # As ingest leaves it: each cluster's watermark where its rolled-up data ends (never back).
        end = datetime.combine(first_day + timedelta(days=days), datetime.min.time(), tzinfo=timezone.utc)
        Cluster.objects.filter(pk__in=[c.pk for c in self.clusters]).filter(
            Q(ingested_until__isnull=True) | Q(ingested_until__lt=end)).update(ingested_until=end)
        return rows

    def seed_hour(self, hour_start: datetime, occupancy: float = 0.7) -> int:
        """One hour of hourly rollups for every device, as ingest writes them (COPY); the
        devices are created the first time."""
        table = UsageHour._meta.db_table
        cols = ("cluster_id", "device_id", "namespace", "pod", "hour_start", "node", "gpu_model", "mig_profile",
                "gpu_fraction", "sample_count", "gpu_seconds", "used_gpu_seconds", "idle_gpu_seconds", "mig_seconds",
                "unknown_util_samples", "idle_prefix_seconds", "idle_suffix_seconds", "idle_max_run_seconds",
                "idle_whole_hour", "dra_claim")
        rows = 0
        for ci, cluster in enumerate(self.clusters):
            ids = self._device_ids(ci, cluster, hour_start)
            with connection.cursor() as cur:
                with cur.cursor.copy(f"COPY {table} ({', '.join(cols)}) FROM STDIN") as copy:
                    for i, (node, model, profile, fraction) in enumerate(self.devices[ci]):
                        ns, util = self._holder(ci, i, occupancy)
                        gpu_s = 3600.0 * fraction
                        copy.write_row((cluster.pk, ids[i], ns, f"pod-{i}" if ns else "", hour_start, node, model,
                                        profile, fraction, 60, gpu_s, gpu_s * util, 0.0,
                                        3600.0 if profile else 0.0, 0, 0.0, 0.0, 0.0, False, False))
                        rows += 1
        return rows

    def _device_ids(self, ci, cluster, seen) -> list[int]:
        if not hasattr(self, "_ids"):
            self._ids = {}
        if ci not in self._ids:
            made = Device.objects.bulk_create([
                Device(cluster=cluster, uuid=f"GPU-{ci}-{i}", mig_instance_id=str(i % 4) if profile else "",
                       host=node, model_name=model, mig_profile=profile, gpu_fraction=fraction,
                       first_seen=seen, last_seen=seen)
                for i, (node, model, profile, fraction) in enumerate(self.devices[ci])], batch_size=5000)
            self._ids[ci] = [d.pk for d in made]
        return self._ids[ci]
