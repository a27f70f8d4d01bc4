"""kube-state-metrics and Kueue series → queued demand, quota hours, team labels, ClusterQueues."""
from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from typing import Iterable

from .labels import resource_fraction, sanitize_label_key
from .records import (ClusterQueueRecord, NamespaceLabelRecord, QueuedRecord, QuotaRecord, Series, Window, _finite,
                      hour_of)


def rollup_queued(
    window: Window, interval_seconds: float, phase: Iterable[Series], requests: Iterable[Series],
) -> list[QueuedRecord]:
    """Pending pods' GPU requests: queued demand, never allocation."""
    pending: dict[tuple[str, str], list[float]] = defaultdict(list)
    for s in phase:
        if s.labels.get("phase") != "Pending":
            continue
        ns, pod = s.labels.get("namespace", ""), s.labels.get("pod", "")
        pending[(ns, pod)].extend(ts for ts, v in s.samples if v == 1 and window.contains(ts))
    if not pending:
        return []
    # Requests per (pod, resource), summed over containers at each timestamp.
    req: dict[tuple[str, str, str], dict[float, float]] = defaultdict(lambda: defaultdict(float))
    for s in requests:
        resource = s.labels.get("resource", "")
        ns, pod = s.labels.get("namespace", ""), s.labels.get("pod", "")
        if (ns, pod) not in pending:
            continue
        if resource != "nvidia_com_gpu" and not resource.startswith("nvidia_com_mig_"):
            continue
        for ts, v in s.samples:
            if _finite(v):
                req[(ns, pod, resource)][ts] += v
    out: dict[tuple, QueuedRecord] = {}
    for (ns, pod, resource), by_ts in req.items():
        times = sorted(by_ts)
        fraction = resource_fraction(resource)
        for ts in sorted(set(pending[(ns, pod)])):
            i = bisect_right(times, ts) - 1
            if i < 0 or ts - times[i] > 2 * interval_seconds:
                continue  # no request known at that moment
            count = by_ts[times[i]]
            if count <= 0:
                continue
            hour = hour_of(ts)
            r = out.get((ns, pod, resource, hour))
            if r is None:
                r = out[(ns, pod, resource, hour)] = QueuedRecord(ns, pod, resource, hour, 0.0, 0.0, 0.0)
            r.requested = max(r.requested, count)
            r.pending_seconds += interval_seconds
            r.queued_gpu_seconds += interval_seconds * count * fraction
    return list(out.values())


def rollup_quota(window: Window, interval_seconds: float, quota: Iterable[Series]) -> list[QuotaRecord]:
    points: dict[tuple[str, str, float], dict[str, float]] = defaultdict(dict)
    for s in quota:
        resource = s.labels.get("resource", "")
        kind = s.labels.get("type", "")
        if kind not in ("hard", "used"):
            continue
        ns = s.labels.get("namespace", "")
        for ts, v in s.samples:
            if not window.contains(ts) or not _finite(v):
                continue
            p = points[(ns, resource, ts)]
            # Several quota objects may cap one resource: the tightest hard limit binds.
            p[kind] = min(p[kind], v) if (kind == "hard" and kind in p) else max(p.get(kind, v), v)
    out: dict[tuple, QuotaRecord] = {}
    for (ns, resource, ts) in sorted(points, key=lambda k: k[2]):
        p = points[(ns, resource, ts)]
        hour = hour_of(ts)
        r = out.get((ns, resource, hour))
        if r is None:
            r = out[(ns, resource, hour)] = QuotaRecord(ns, resource, hour, None, None, 0.0)
        if "hard" in p:
            r.hard = p["hard"]
        if "used" in p:
            r.used_max = p["used"] if r.used_max is None else max(r.used_max, p["used"])
        if "hard" in p and "used" in p and p["used"] >= p["hard"]:
            r.seconds_at_hard += interval_seconds
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
