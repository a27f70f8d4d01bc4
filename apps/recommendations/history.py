"""Reading the rollups into per-resource hourly histories (the shell around estimator.py)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from apps.accounting.core.measures import gpu_hours
from apps.accounting.usage import reader as rollup_reader

from .manifests import is_gpu_quota_resource, quota_resource_for, quota_resource_from_request

HOUR = timedelta(hours=1)


@dataclass
class NamespaceHistory:
    """Everything known of one namespace over the window, per quota resource."""
    cluster_id: int
    namespace: str
    history_start: datetime
    # resource -> hour_start -> allocated GPUs (whole GPUs) or instances (MIG profile)
    hourly: dict[str, dict[datetime, float]] = field(default_factory=lambda: defaultdict(dict))
    allocated_gpu_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    used_gpu_seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    model_seconds: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))
    queued_gpu_hours: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    # the part of it queued while the quota was full (used + pending requests > hard)
    quota_bound_queued_gpu_hours: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    # resource -> (latest hard, latest used, seconds at hard, hours with a hard limit)
    quota: dict[str, tuple[float, float | None, float, int]] = field(default_factory=dict)
    # resource -> peak used: the most GPUs counted against the quota in any hour of the window
    # (the highest QuotaHour.used_max), the team page's "Peak used" too (docs/advice-and-alerts.md)
    quota_peak: dict[str, float] = field(default_factory=dict)
    quota_seen: dict[str, datetime] = field(default_factory=dict)  # resource -> last hour with a hard limit

    def resources(self) -> list[str]:
        return sorted(set(self.hourly) | set(self.quota) | set(self.queued_gpu_hours))

    def dominant_model(self, resource: str) -> str | None:
        models = self.model_seconds.get(resource)
        if not models:
            return None
        return max(sorted(models), key=lambda m: models[m])


def hour_range(start: datetime, end: datetime) -> list[datetime]:
    out, t = [], start
    while t < end:
        out.append(t)
        t += HOUR
    return out


def series(by_hour: dict[datetime, float], start: datetime, end: datetime) -> list[float]:
    """One value per hour of [start, end); hours without rows are 0 (nothing allocated)."""
    return [by_hour.get(t, 0.0) for t in hour_range(start, end)]


def namespace_histories(cluster_ids, start: datetime, end: datetime) -> dict[tuple[int, str], NamespaceHistory]:
    """Four aggregate queries whatever the number of namespaces, devices or pods."""
    first = rollup_reader.first_hours(cluster_ids, end)
    out: dict[tuple[int, str], NamespaceHistory] = {}

    def get(cluster_id, namespace):
        key = (cluster_id, namespace)
        h = out.get(key)
        if h is None:
            h = out[key] = NamespaceHistory(cluster_id, namespace, max(start, first.get(key, start)))
        return h

    hourly = rollup_reader.namespace_hours(cluster_ids, start, end)
    for r in hourly:
        resource = quota_resource_for(r["mig_profile"])
        seconds = r["mig_s"] if r["mig_profile"] else r["gpu_s"]
        get(r["cluster_id"], r["namespace"]).hourly[resource][r["hour_start"]] = gpu_hours(seconds or 0.0)
    totals = rollup_reader.namespace_model_totals(cluster_ids, start, end)
    for r in totals:
        h = get(r["cluster_id"], r["namespace"])
        resource = quota_resource_for(r["mig_profile"])
        h.allocated_gpu_seconds[resource] += r["gpu_s"] or 0.0
        h.used_gpu_seconds[resource] += r["used_s"] or 0.0
        h.model_seconds[resource][r["gpu_model"]] += r["gpu_s"] or 0.0
    quota_rows = rollup_reader.quota_hours(cluster_ids, start, end)
    quota_at = {(c, ns, res, hour): (hard, used) for c, ns, res, hour, hard, used, _ in quota_rows}
    queued = rollup_reader.queued_hours(cluster_ids, start, end)
    for r in queued:
        resource = quota_resource_from_request(r["resource"])
        if resource:
            h = get(r["cluster_id"], r["namespace"])
            hours = gpu_hours(r["q"] or 0.0)
            h.queued_gpu_hours[resource] += hours
            hard, used = quota_at.get((r["cluster_id"], r["namespace"], resource, r["hour_start"]), (None, None))
            if hard is not None and (used or 0.0) + (r["requested"] or 0.0) > hard:
                h.quota_bound_queued_gpu_hours[resource] += hours
    for cluster_id, namespace, resource, hour, hard, used, at_hard in quota_rows:
        if not is_gpu_quota_resource(resource):
            continue
        h = get(cluster_id, namespace)
        _, _, seconds, count = h.quota.get(resource, (None, None, 0.0, 0))
        h.quota[resource] = (hard, used, seconds + (at_hard or 0.0), count + 1)
        if used is not None:
            h.quota_peak[resource] = max(h.quota_peak.get(resource, used), used)
        h.quota_seen[resource] = hour
    return out


def cluster_models(cluster_ids, start: datetime, end: datetime):
    """Each cluster's most common GPU model per quota resource (capacity seconds) — the model to
    price a quota nobody used — and each (model, MIG profile)'s GPU fraction, as rolled up."""
    rows = rollup_reader.capacity_by_model(cluster_ids, start, end)
    best: dict[tuple[int, str], tuple[float, str]] = {}
    fractions: dict[tuple[str, str], float] = {}
    for r in rows:
        key = (r["cluster_id"], quota_resource_for(r["mig_profile"]))
        candidate = (r["s"] or 0.0, r["gpu_model"])
        if key not in best or candidate[0] > best[key][0]:
            best[key] = candidate
        if r["mig_profile"] and r["mig_s"]:
            fractions[(r["gpu_model"], r["mig_profile"])] = (r["s"] or 0.0) / r["mig_s"]
    return {k: v[1] for k, v in best.items()}, fractions
