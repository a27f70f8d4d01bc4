"""kube-state-metrics and Kueue series → queued demand, quota hours, team labels, ClusterQueues."""
from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from typing import Iterable

from .labels import is_gpu_resource, resource_fraction, sanitize_label_key
from .records import (DEFAULT_REPLICA_LABELS, ClusterQueueRecord, NamespaceLabelRecord, PodOwnerRecord, QueuedRecord,
                      QuotaRecord, Series, Window, _finite, hour_of)
from .copies import merge_copies, priority as _priority
from .timeline import STALENESS_SECONDS, durations


def _merged(series: Iterable[Series], identity, replica_labels, fallback, pinned=None):
    """{identity: (samples, seconds)}: copies of one series (replicas) merged, with the seconds
    each sample stands for (docs/accounting.md "How long a sample counts")."""
    groups: dict[tuple, list] = defaultdict(list)
    for s in series:
        ident = identity(s.labels)
        if ident is not None:
            groups[ident].append((_priority(s.labels, replica_labels), s.samples))
    out = {}
    for ident, members in groups.items():
        members.sort(key=lambda m: m[0])
        merged = merge_copies([list(m[1]) for m in members], fallback)
        out[ident] = (merged, durations([t for t, _ in merged], fallback, pinned))
    return out


def _value_at(times: list[float], values: list[float], ts: float) -> float | None:
    i = bisect_right(times, ts) - 1
    if i < 0 or ts - times[i] > STALENESS_SECONDS:
        return None
    return values[i]


def rollup_queued(
    window: Window, interval_seconds: float, phase: Iterable[Series], requests: Iterable[Series],
    replica_labels=DEFAULT_REPLICA_LABELS, pinned_interval_seconds: float | None = None,
) -> list[QueuedRecord]:
    """Pending pods' GPU requests: queued demand, never allocation (docs/accounting.md)."""
    pending_streams = _merged(
        (s for s in phase if s.labels.get("phase") == "Pending"),
        lambda lb: (lb.get("namespace", ""), lb.get("pod", "")), replica_labels, interval_seconds,
        pinned_interval_seconds)
    pending: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for ident, (samples, seconds) in pending_streams.items():
        moments = [(ts, sec) for (ts, v), sec in zip(samples, seconds) if v == 1 and window.contains(ts)]
        if moments:
            pending[ident] = moments
    if not pending:
        return []

    def request_identity(lb):
        resource = lb.get("resource", "")
        ns, pod = lb.get("namespace", ""), lb.get("pod", "")
        if (ns, pod) not in pending or not is_gpu_resource(resource):
            return None
        return (ns, pod, resource, lb.get("container", ""))

    containers = _merged(requests, request_identity, replica_labels, interval_seconds, pinned_interval_seconds)
    by_resource: dict[tuple, list] = defaultdict(list)
    for (ns, pod, resource, _container), (samples, _seconds) in containers.items():
        finite = [(t, v) for t, v in samples if _finite(v)]
        by_resource[(ns, pod, resource)].append(([t for t, _ in finite], [v for _, v in finite]))
    out: dict[tuple, QueuedRecord] = {}
    for (ns, pod, resource), streams in by_resource.items():
        fraction = resource_fraction(resource)
        for ts, seconds in pending[(ns, pod)]:
            values = [v for v in (_value_at(times, vals, ts) for times, vals in streams) if v is not None]
            count = sum(values)
            if not values or count <= 0:
                continue  # no request known at that moment
            hour = hour_of(ts)
            r = out.get((ns, pod, resource, hour))
            if r is None:
                r = out[(ns, pod, resource, hour)] = QueuedRecord(ns, pod, resource, hour, 0.0, 0.0, 0.0)
            r.requested = max(r.requested, count)
            r.pending_seconds += seconds
            r.queued_gpu_seconds += seconds * count * fraction
    return list(out.values())


def rollup_quota(window: Window, interval_seconds: float, quota: Iterable[Series],
                 replica_labels=DEFAULT_REPLICA_LABELS, pinned_interval_seconds: float | None = None,
                 ) -> list[QuotaRecord]:
    def identity(lb):
        kind = lb.get("type", "")
        if kind not in ("hard", "used"):
            return None
        return (lb.get("namespace", ""), lb.get("resource", ""), kind, lb.get("resourcequota", ""))

    streams = _merged(quota, identity, replica_labels, interval_seconds, pinned_interval_seconds)
    hard_of: dict[tuple, list] = defaultdict(list)
    for (ns, resource, kind, _name), (samples, _seconds) in streams.items():
        if kind == "hard":
            finite = [(t, v) for t, v in samples if _finite(v)]
            hard_of[(ns, resource)].append(([t for t, _ in finite], [v for _, v in finite]))
    out: dict[tuple, QuotaRecord] = {}

    def record(ns, resource, hour):
        r = out.get((ns, resource, hour))
        if r is None:
            r = out[(ns, resource, hour)] = QuotaRecord(ns, resource, hour, None, None, 0.0)
        return r

    for (ns, resource, kind, _name), (samples, seconds) in sorted(streams.items()):
        for (ts, v), sec in zip(samples, seconds):
            if not window.contains(ts) or not _finite(v):
                continue
            r = record(ns, resource, hour_of(ts))
            if kind == "hard":
                continue
            r.used_max = v if r.used_max is None else max(r.used_max, v)
            # Several quota objects may cap one resource: the tightest hard limit binds.
            hards = [h for h in (_value_at(t, vals, ts) for t, vals in hard_of.get((ns, resource), ()))
                     if h is not None]
            if hards and v >= min(hards):
                r.seconds_at_hard += sec
    # the hard limit in force at the end of each hour (the latest sample in it)
    for (ns, resource), hard_streams in hard_of.items():
        latest: dict[int, tuple[float, float]] = {}
        for times, vals in hard_streams:
            for t, v in zip(times, vals):
                if window.contains(t):
                    h = hour_of(t)
                    if h not in latest or t > latest[h][0] or (t == latest[h][0] and v < latest[h][1]):
                        latest[h] = (t, v)
        for h, (_t, v) in latest.items():
            record(ns, resource, h).hard = v
    return list(out.values())


def namespace_teams(series: Iterable[Series], team_label_key: str) -> dict[str, NamespaceLabelRecord]:
    """Team label per namespace and hour, from every sample (a re-label starts a new series).

    An hour carries the label of its last sample, so a change is kept at the hour of the
    first sample with the new label (docs/teams-and-relabels.md).
    """
    label = sanitize_label_key(team_label_key)
    points: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for s in series:
        ns = s.labels.get("namespace", "")
        if ns:
            value = s.labels.get(label, "")
            points[ns].extend((ts, value) for ts, _ in s.samples)
    out: dict[str, NamespaceLabelRecord] = {}
    for ns, samples in points.items():
        if not samples:
            continue
        samples.sort()
        hours: dict[int, str] = {}
        for ts, value in samples:
            hours[hour_of(ts)] = value
        out[ns] = NamespaceLabelRecord(ns, hours, samples[-1][0])
    return out


def cluster_queues(nominal: Iterable[Series], borrowing: Iterable[Series] = (), lending: Iterable[Series] = (),
                   pending: Iterable[Series] = ()) -> list[ClusterQueueRecord]:
    """Latest Kueue quota per (ClusterQueue, flavor, resource); pending workloads per queue."""
    records: dict[tuple, ClusterQueueRecord] = {}
    for field_name, series_list in (("nominal_quota", nominal), ("borrowing_limit", borrowing),
                                    ("lending_limit", lending)):
        for s in series_list:
            if not s.samples:
                continue
            key = (s.labels.get("cluster_queue", ""), s.labels.get("flavor", ""), s.labels.get("resource", ""))
            ts, value = s.samples[-1]
            r = records.get(key)
            if r is None:
                r = records[key] = ClusterQueueRecord(key[0], s.labels.get("cohort", ""), key[1], key[2], ts)
            if _finite(value):
                setattr(r, field_name, value)
            r.observed_at = max(r.observed_at, ts)
    waiting: dict[str, float] = defaultdict(float)
    for s in pending:
        if s.samples and _finite(s.samples[-1][1]):
            waiting[s.labels.get("cluster_queue", "")] += s.samples[-1][1]
    for r in records.values():
        if r.cluster_queue in waiting:
            r.pending_workloads = waiting[r.cluster_queue]
    return list(records.values())


def _ns(lb) -> str:
    """kube-state-metrics' own `namespace` label, renamed `exported_namespace` when it is scraped
    without honor_labels."""
    return lb.get("exported_namespace") or lb.get("namespace", "")


def _real(value: str | None) -> bool:
    return bool(value) and value != "<none>"


def pod_owners(owners: Iterable[Series], replicaset_owners: Iterable[Series] = (),
               job_owners: Iterable[Series] = (), notebook_labels: Iterable[Series] = ()
               ) -> dict[tuple[str, str], PodOwnerRecord]:
    """(namespace, pod) → its workload, from `kube_pod_owner{owner_is_controller="true"}`,
    followed one step up: a ReplicaSet to the Deployment that owns it (`kube_replicaset_owner`),
    a Job to its CronJob (`kube_job_owner`), and a StatefulSet pod whose `notebook-name` label
    kube-state-metrics exports (`kube_pod_labels{label_notebook_name}`) to that Notebook.
    Pods with no controller (`owner_kind="<none>"`) are left out: they are their own workload."""
    parents: dict[tuple[str, str, str], tuple[str, str]] = {}
    for kind, series, key in (("ReplicaSet", replicaset_owners, "replicaset"), ("Job", job_owners, "job_name")):
        for s in series:
            lb = s.labels
            if _real(lb.get("owner_kind")) and _real(lb.get("owner_name")) and lb.get(key):
                parents[(kind, _ns(lb), lb[key])] = (lb["owner_kind"], lb["owner_name"])
    notebooks = {(_ns(s.labels), s.labels.get("exported_pod") or s.labels.get("pod", "")): s.labels["label_notebook_name"]
                 for s in notebook_labels if s.labels.get("label_notebook_name")}
    out: dict[tuple[str, str], PodOwnerRecord] = {}
    for s in owners:
        lb = s.labels
        if lb.get("owner_is_controller", "true") != "true":
            continue
        kind, name = lb.get("owner_kind", ""), lb.get("owner_name", "")
        ns, pod = _ns(lb), lb.get("exported_pod") or lb.get("pod", "")
        if not (_real(kind) and _real(name) and ns and pod):
            continue
        workload = parents.get((kind, ns, name), (kind, name))
        if kind == "StatefulSet" and (ns, pod) in notebooks:
            workload = ("Notebook", notebooks[(ns, pod)])
        out[(ns, pod)] = PodOwnerRecord(ns, pod, kind, name, *workload)
    return out
