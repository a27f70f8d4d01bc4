"""Usage per workload over a window, from the hourly rollups: what right-sizing reads
(docs/advice-and-alerts.md, "Right-sizing").

A workload is a pod's owner as ingest recorded it (`PodOwner`: Deployment, StatefulSet, Job,
CronJob, Notebook…); a pod with no known owner is its own workload (kind `Pod`). One row per
(namespace, workload, GPU model, MIG profile): a workload that ran on two kinds of GPU has a
row for each, since each is sized on its own. Everything is aggregated in one SQL query.

The rows of a window are stored (docs/performance.md, "Right-sizing and quota advice"): the
fleet's, at the version of what they are computed from — the usage hours of every month the
window touches (the dated log) and the pod owners — in the store of month answers, so every page
and role asking for the same window reads them instead of aggregating four weeks of hours again;
a version read first, a miss computed and stored, never served stale.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import datetime

from django.db import connection

from django.db.models import (Aggregate, CharField, Count, F, FloatField, Max, Min, OuterRef, Subquery, Sum, Value)
from django.db.models.functions import Cast, Coalesce, Concat, NullIf

from apps.accounting.core.measures import efficiency, percentile
from apps.accounting.models import PodOwner, UsageHour
from apps.accounting.stored.inputs import OWNERS
from apps.accounting.stored.responses import window_body
from apps.accounting.stored.versions import stored_answers

POD_KIND = "Pod"


class Percentile(Aggregate):
    """PostgreSQL's `percentile_cont(p) WITHIN GROUP (ORDER BY expr)`: linear interpolation
    between closest ranks, the same rule as the quota advice's percentiles (type 7); NULLs
    are skipped."""
    function = "percentile_cont"
    template = "%(function)s(%(p)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression, p: float, **extra):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"percentile {p} is not within 0..1")
        super().__init__(expression, p=float(p), **extra)


@dataclass(frozen=True)
class WorkloadUsage:
    cluster_id: int
    namespace: str
    workload_kind: str
    workload_name: str
    gpu_model: str
    mig_profile: str
    gpu_fraction: float          # the largest share of a GPU one of its rows held (1, a MIG slice's, a time slice's)
    pods: int
    first_hour: datetime
    hours: int                   # distinct hours with any of its pods holding a device
    pod_hours: int               # distinct (pod, hour)
    device_hours: int            # rows: (pod, device, hour)
    gpu_seconds: float
    used_gpu_seconds: float
    idle_gpu_seconds: float      # allocated seconds below the cluster's idle threshold (docs/accounting.md)
    mig_seconds: float
    activity_p95: float | None   # of the hourly used ÷ allocated, over its (pod, device, hour) rows
    fb_hours: int                # rows with a framebuffer reading
    fb_peak_mib: float | None
    fb_p95_mib: float | None     # of the hourly peaks

    @property
    def activity(self) -> float | None:
        """Used ÷ allocated GPU-seconds over the window (docs/figures.md, efficiency)."""
        return efficiency(self.used_gpu_seconds, self.gpu_seconds)

    @property
    def devices_per_pod(self) -> float:
        return self.device_hours / self.pod_hours if self.pod_hours else 0.0


def workload_usage(cluster_ids, start: datetime, end: datetime, namespaces=None) -> list[WorkloadUsage]:
    """Each workload's usage in [start, end), one row per (namespace, workload, model, profile);
    `namespaces` (a set) keeps those namespaces' rows. Read from the store where it keeps answers."""
    if not stored_answers():
        return computed_workload_usage(cluster_ids, start, end, namespaces)
    key = (f"workloads?clusters={','.join(str(c) for c in sorted(cluster_ids))}"
           f"&start={start.isoformat()}&end={end.isoformat()}")
    rows = _load(window_body(start, end, key, lambda: _dump(computed_workload_usage(cluster_ids, start, end)),
                             also=(OWNERS,)))
    return rows if namespaces is None else [u for u in rows if u.namespace in namespaces]


def _dump(rows: list[WorkloadUsage]) -> bytes:
    return json.dumps([{**asdict(u), "first_hour": u.first_hour.isoformat()} for u in rows]).encode()


def _load(raw: bytes) -> list[WorkloadUsage]:
    return [WorkloadUsage(**{**r, "first_hour": datetime.fromisoformat(r["first_hour"])}) for r in json.loads(raw)]


def computed_workload_usage(cluster_ids, start: datetime, end: datetime, namespaces=None) -> list[WorkloadUsage]:
    """`workload_usage` computed from the hourly rollups, in one SQL query."""
    owner = PodOwner.objects.filter(cluster_id=OuterRef("cluster_id"), namespace=OuterRef("namespace"),
                                    pod=OuterRef("pod"))
    qs = UsageHour.objects.filter(cluster_id__in=cluster_ids, hour_start__gte=start, hour_start__lt=end,
                                  gpu_seconds__gt=0).exclude(namespace="")
    if namespaces is not None:
        qs = qs.filter(namespace__in=namespaces)
    keyed = qs.annotate(
        kind=Coalesce(Subquery(owner.values("workload_kind")[:1]), Value(POD_KIND)),
        workload=Coalesce(Subquery(owner.values("workload_name")[:1]), F("pod")),
        activity=F("used_gpu_seconds") / NullIf(F("gpu_seconds"), 0.0))
    key = ("cluster_id", "namespace", "kind", "workload", "gpu_model", "mig_profile")
    in_sql = connection.vendor == "postgresql"
    p95s = {"activity_p95": Percentile("activity", 0.95), "fb_p95": Percentile("fb_used_mib_max", 0.95)} if in_sql else {}
    rows = list(keyed.values(*key)
                .annotate(fraction=Max("gpu_fraction"), pods=Count("pod", distinct=True), first=Min("hour_start"),
                          hours=Count("hour_start", distinct=True),
                          pod_hours=Count(Concat("pod", Value("|"), Cast("hour_start", CharField())), distinct=True),
                          device_hours=Count("id"), gpu_s=Sum("gpu_seconds"), used_s=Sum("used_gpu_seconds"),
                          idle_s=Sum("idle_gpu_seconds"), mig_s=Sum("mig_seconds"),
                          fb_hours=Count("fb_used_mib_max"), fb_peak=Max("fb_used_mib_max"), **p95s)
                .order_by(*key))
    if not in_sql:
        # SQLite (the demo) has no percentile_cont: the same type-7 percentile over the same values
        values = defaultdict(lambda: ([], []))
        for *k, activity, fb in keyed.values_list(*key, "activity", "fb_used_mib_max"):
            if activity is not None:
                values[tuple(k)][0].append(activity)
            if fb is not None:
                values[tuple(k)][1].append(fb)
        for r in rows:
            activity, fb = values.get(tuple(r[k] for k in key), ([], []))
            r["activity_p95"] = percentile(activity, 0.95) if activity else None
            r["fb_p95"] = percentile(fb, 0.95) if fb else None
    return [WorkloadUsage(
        cluster_id=r["cluster_id"], namespace=r["namespace"], workload_kind=r["kind"], workload_name=r["workload"],
        gpu_model=r["gpu_model"], mig_profile=r["mig_profile"], gpu_fraction=r["fraction"], pods=r["pods"],
        first_hour=r["first"], hours=r["hours"], pod_hours=r["pod_hours"], device_hours=r["device_hours"],
        gpu_seconds=r["gpu_s"] or 0.0, used_gpu_seconds=r["used_s"] or 0.0,
        idle_gpu_seconds=r["idle_s"] or 0.0, mig_seconds=r["mig_s"] or 0.0,
        activity_p95=r["activity_p95"], fb_hours=r["fb_hours"], fb_peak_mib=r["fb_peak"], fb_p95_mib=r["fb_p95"],
    ) for r in rows]
