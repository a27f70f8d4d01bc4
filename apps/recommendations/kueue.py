"""Kueue ClusterQueues: advice from the summed allocation of the namespaces whose LocalQueues
point at the queue (`ClusterQueueQuota.namespaces`), against its nominal quota.

Reads `apps.clusters.models.ClusterQueueQuota` (one row per cluster queue, flavor and resource,
from `kueue_cluster_queue_nominal_quota` and friends); without that model, no rows.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from . import estimator as est
from .history import NamespaceHistory, series
from .manifests import clusterqueue_yaml, kueue_resource, mig_profile_of

try:
    from apps.clusters.models import ClusterQueueQuota
except ImportError:
    ClusterQueueQuota = None


def is_gpu_resource(name: str) -> bool:
    return name == "nvidia.com/gpu" or name.startswith("nvidia.com/mig-")


def latest_quotas(cluster) -> dict[str, list]:
    """cluster queue name -> its latest row per (flavor, resource)."""
    if ClusterQueueQuota is None:
        return {}
    latest = {}
    for row in ClusterQueueQuota.objects.filter(cluster=cluster).order_by("observed_at", "pk"):
        latest[(row.cluster_queue, row.flavor, row.resource)] = row
    by_queue = defaultdict(list)
    for (queue, _, _), row in sorted(latest.items()):
        by_queue[queue].append(row)
    return by_queue


def merged_history(members, histories, cluster_id) -> NamespaceHistory | None:
    parts = [histories[(cluster_id, ns)] for ns in members if (cluster_id, ns) in histories]
    if not parts:
        return None
    merged = NamespaceHistory(cluster_id, ",".join(members), min(p.history_start for p in parts))
    for p in parts:
        for resource, by_hour in p.hourly.items():
            target = merged.hourly[resource]
            for hour, value in by_hour.items():
                target[hour] = target.get(hour, 0.0) + value
        for resource, seconds in p.allocated_gpu_seconds.items():
            merged.allocated_gpu_seconds[resource] += seconds
        for resource, seconds in p.used_gpu_seconds.items():
            merged.used_gpu_seconds[resource] += seconds
        for resource, models in p.model_seconds.items():
            for model, seconds in models.items():
                merged.model_seconds[resource][model] += seconds
        for resource, hours in p.queued_gpu_hours.items():
            merged.queued_gpu_hours[resource] += hours
    return merged


def cluster_queue_rows(cluster, histories, window: tuple[datetime, datetime], params, rate, fallback_models):
    out = []
    for queue, rows in latest_quotas(cluster).items():
        members = sorted({ns for r in rows for ns in (r.namespaces or [])})
        if not members:
            continue  # no namespace mapped to the queue yet: nothing to base advice on
        merged = merged_history(members, histories, cluster.pk)
        pending = max((r.pending_workloads or 0 for r in rows), default=0)
        nominal = defaultdict(float)
        for r in rows:
            if is_gpu_resource(r.resource):
                nominal[r.resource] += r.nominal_quota or 0.0
        assessments = {}
        for resource in sorted(nominal):
            quota_resource = "requests." + resource
            h = merged
            history = est.ResourceHistory(
                resource=resource,
                hourly=series(h.hourly.get(quota_resource, {}), h.history_start, window[1]) if h else [],
                hard=nominal[resource],
                allocated_gpu_seconds=h.allocated_gpu_seconds.get(quota_resource, 0.0) if h else 0.0,
                used_gpu_seconds=h.used_gpu_seconds.get(quota_resource, 0.0) if h else 0.0,
                queued_gpu_hours=h.queued_gpu_hours.get(quota_resource, 0.0) if h else 0.0,
                pending_workloads=pending or None,
            )
            model = (h.dominant_model(quota_resource) if h else None) or fallback_models.get((cluster.pk, quota_resource))
            assessments[resource] = est.assess(history, params, rate(model, mig_profile_of(resource)))
        if not assessments:
            continue
        out.append({
            "name": queue, "cohort": next((r.cohort for r in rows if r.cohort), ""), "members": members,
            "assessments": list(assessments.values()), "yaml": queue_yaml(queue, rows, assessments),
        })
    return out


def queue_yaml(queue: str, rows, assessments: dict) -> str:
    """GPU resources get the recommended nominalQuota, shared over flavors in proportion to
    their current nominal quotas; other resources (cpu, memory) are copied as they are, since
    applying the snippet replaces the whole resourceGroups list."""
    flavors: dict[str, list] = defaultdict(list)
    by_resource = defaultdict(list)
    for r in rows:
        by_resource[r.resource].append(r)
    for resource, resource_rows in by_resource.items():
        if resource in assessments:
            shares = est.split_by_weight(assessments[resource].recommended,
                                         [r.nominal_quota or 0.0 for r in resource_rows])
        else:
            shares = [r.nominal_quota for r in resource_rows]
        for r, share in zip(resource_rows, shares):
            flavors[r.flavor].append({"name": kueue_resource(resource), "nominalQuota": share,
                                      "borrowingLimit": r.borrowing_limit, "lendingLimit": r.lending_limit})
    cohort = next((r.cohort for r in rows if r.cohort), "")
    return clusterqueue_yaml(queue, cohort, [{"name": f, "resources": res} for f, res in sorted(flavors.items())])
