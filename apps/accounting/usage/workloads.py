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
from datetime import datetime, timezone as dt_timezone

from django.db import connection, transaction

from apps.accounting.core.measures import efficiency, percentile
from apps.accounting.models import PodOwner, UsageHour
from apps.accounting.stored.inputs import OWNERS
from apps.accounting.stored.responses import window_body
from apps.accounting.stored.versions import stored_answers

POD_KIND = "Pod"


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


# One statement, written for what it reads (docs/performance.md, "The longest reads"): each
# hourly row joined once to its pod's owner (`PodOwner` is unique per cluster, namespace and
# pod), the (pod, hour) pairs counted as a row value, and the P95s by PostgreSQL's
# `percentile_cont` (linear interpolation between closest ranks, type 7, NULLs skipped: the
# quota advice's rule). The ORM's form of it looked each row's owner up twice and built a text
# per row to count (pod, hour) pairs: three times slower at 10,000 GPUs.
_KEY_COLUMNS = """u.cluster_id, u.namespace, COALESCE(o.workload_kind, %(pod_kind)s),
       COALESCE(o.workload_name, u.pod), u.gpu_model, u.mig_profile"""
_ROWS = """
FROM {hours} u
LEFT JOIN {owners} o ON o.cluster_id = u.cluster_id AND o.namespace = u.namespace AND o.pod = u.pod
WHERE u.cluster_id IN ({clusters}) AND u.hour_start >= %(start)s AND u.hour_start < %(end)s
  AND u.gpu_seconds > 0 AND u.namespace <> ''{namespaces}"""
_ACTIVITY = "u.used_gpu_seconds / NULLIF(u.gpu_seconds, 0.0)"
_AGGREGATES = """MAX(u.gpu_fraction), COUNT(DISTINCT u.pod), MIN(u.hour_start), COUNT(DISTINCT u.hour_start),
       {pod_hours}, COUNT(*), SUM(u.gpu_seconds), SUM(u.used_gpu_seconds), SUM(u.idle_gpu_seconds),
       SUM(u.mig_seconds), COUNT(u.fb_used_mib_max), MAX(u.fb_used_mib_max)"""
_P95S = (f", percentile_cont(0.95) WITHIN GROUP (ORDER BY {_ACTIVITY}),"
         " percentile_cont(0.95) WITHIN GROUP (ORDER BY u.fb_used_mib_max)")
# SQLite (the demo) counts no row values and has no percentile_cont: (pod, hour) as one text,
# and the same type-7 percentile over the same values in Python.
_POD_HOURS = {"postgresql": "COUNT(DISTINCT (u.pod, u.hour_start))",
              "sqlite": "COUNT(DISTINCT u.pod || '|' || u.hour_start)"}


def computed_workload_usage(cluster_ids, start: datetime, end: datetime, namespaces=None) -> list[WorkloadUsage]:
    """`workload_usage` computed from the hourly rollups, in one SQL statement."""
    cluster_ids = [int(c) for c in cluster_ids]
    if not cluster_ids or (namespaces is not None and not namespaces):
        return []
    in_sql = connection.vendor == "postgresql"
    adapt = connection.ops.adapt_datetimefield_value
    params = {"pod_kind": POD_KIND, "start": adapt(start), "end": adapt(end)}
    where_ns = ""
    if namespaces is not None:
        names = sorted(namespaces)
        params.update({f"ns{i}": n for i, n in enumerate(names)})
        where_ns = f" AND u.namespace IN ({', '.join(f'%(ns{i})s' for i in range(len(names)))})"
    rows_sql = _ROWS.format(hours=UsageHour._meta.db_table, owners=PodOwner._meta.db_table,
                            clusters=", ".join(str(c) for c in cluster_ids), namespaces=where_ns)
    aggregates = _AGGREGATES.format(pod_hours=_POD_HOURS["postgresql" if in_sql else "sqlite"])
    sql = (f"SELECT {_KEY_COLUMNS}, {aggregates}{_P95S if in_sql else ''} {rows_sql} "
           "GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6")
    with transaction.atomic(savepoint=False), connection.cursor() as cur:
        if in_sql:
            # JIT compiling this one statement cost ~0.8 s of its ~7 at 10,000 GPUs and saved nothing
            cur.execute("SET LOCAL jit = off")
        cur.execute(sql, params)
        rows = cur.fetchall()
        values = {} if in_sql else _values(cur, f"SELECT {_KEY_COLUMNS}, {_ACTIVITY}, u.fb_used_mib_max {rows_sql}",
                                           params)
    out = []
    for (cluster_id, namespace, kind, workload, model, profile, fraction, pods, first, hours, pod_hours,
         device_hours, gpu_s, used_s, idle_s, mig_s, fb_hours, fb_peak, *p95) in rows:
        if not in_sql:
            activity, fb = values.get((cluster_id, namespace, kind, workload, model, profile), ([], []))
            p95 = [percentile(activity, 0.95) if activity else None, percentile(fb, 0.95) if fb else None]
        out.append(WorkloadUsage(
            cluster_id=cluster_id, namespace=namespace, workload_kind=kind, workload_name=workload,
            gpu_model=model, mig_profile=profile, gpu_fraction=fraction, pods=pods, first_hour=_aware(first),
            hours=hours, pod_hours=pod_hours, device_hours=device_hours, gpu_seconds=gpu_s or 0.0,
            used_gpu_seconds=used_s or 0.0, idle_gpu_seconds=idle_s or 0.0, mig_seconds=mig_s or 0.0,
            activity_p95=p95[0], fb_hours=fb_hours, fb_peak_mib=fb_peak, fb_p95_mib=p95[1]))
    return out


def _values(cur, sql: str, params: dict) -> dict:
    """SQLite: each workload's hourly activity and framebuffer values, for its percentiles."""
    values = defaultdict(lambda: ([], []))
    cur.execute(sql, params)
    for *key, activity, fb in cur.fetchall():
        if activity is not None:
            values[tuple(key)][0].append(activity)
        if fb is not None:
            values[tuple(key)][1].append(fb)
    return values


def _aware(value) -> datetime:
    """A timestamp as the database gave it, made aware (SQLite gives text or naive UTC)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=dt_timezone.utc)
