"""Reading the rollups into per-resource hourly histories (the shell around estimator.py).

A window's histories and its clusters' models are stored (docs/performance.md, "Right-sizing and
quota advice") at the version of what they read — the usage hours of the months the window
touches and the quota log (quota and queued-demand hours) — so every role's advice page reads
them instead of four weeks of hourly rows; the namespaces' first hours, read over all history
before the window's end, are read each time.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from apps.accounting.core.measures import gpu_hours
from apps.accounting.stored import QUOTA, stored_answers, window_body
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


def _key(what: str, cluster_ids, start: datetime, end: datetime) -> str:
    return (f"{what}?clusters={','.join(str(c) for c in sorted(cluster_ids))}"
            f"&start={start.isoformat()}&end={end.isoformat()}")


def namespace_histories(cluster_ids, start: datetime, end: datetime) -> dict[tuple[int, str], NamespaceHistory]:
    """Each namespace's history over [start, end), from the store where it keeps answers; its
    history starts at its first rollup row (usage or quota) or the window's start, whichever is later."""
    if stored_answers():
        out = _load_histories(window_body(start, end, _key("advice-histories", cluster_ids, start, end),
                                          lambda: _dump_histories(computed_histories(cluster_ids, start, end)),
                                          also=(QUOTA,)))
    else:
        out = computed_histories(cluster_ids, start, end)
    first = rollup_reader.first_hours(cluster_ids, end)
    for key, h in out.items():
        h.history_start = max(start, first.get(key, start))
    return out


_FLOATS = ("allocated_gpu_seconds", "used_gpu_seconds", "queued_gpu_hours", "quota_bound_queued_gpu_hours",
           "quota_peak")


def _dump_histories(histories: dict) -> bytes:
    return json.dumps([{
        "cluster_id": h.cluster_id, "namespace": h.namespace,
        "hourly": {r: [[t.isoformat(), v] for t, v in by_hour.items()] for r, by_hour in h.hourly.items()},
        "model_seconds": {r: dict(m) for r, m in h.model_seconds.items()},
        "quota": {r: list(v) for r, v in h.quota.items()},
        "quota_seen": {r: t.isoformat() for r, t in h.quota_seen.items()},
        **{name: dict(getattr(h, name)) for name in _FLOATS},
    } for h in histories.values()]).encode()


def _load_histories(raw: bytes) -> dict[tuple[int, str], NamespaceHistory]:
    out = {}
    for d in json.loads(raw):
        h = NamespaceHistory(d["cluster_id"], d["namespace"], None)
        for r, pairs in d["hourly"].items():
            h.hourly[r] = {datetime.fromisoformat(t): v for t, v in pairs}
        for r, models in d["model_seconds"].items():
            h.model_seconds[r].update(models)
        h.quota = {r: tuple(v) for r, v in d["quota"].items()}
        h.quota_seen = {r: datetime.fromisoformat(t) for r, t in d["quota_seen"].items()}
        for name in _FLOATS:
            getattr(h, name).update(d[name])
        out[(h.cluster_id, h.namespace)] = h
    return out


def computed_histories(cluster_ids, start: datetime, end: datetime) -> dict[tuple[int, str], NamespaceHistory]:
    """Four aggregate queries whatever the number of namespaces, devices or pods; each history
    starts at `start` (`namespace_histories` sets its own start)."""
    out: dict[tuple[int, str], NamespaceHistory] = {}

    def get(cluster_id, namespace):
        key = (cluster_id, namespace)
        h = out.get(key)
        if h is None:
            h = out[key] = NamespaceHistory(cluster_id, namespace, start)
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
    price a quota nobody used — and each (model, MIG profile)'s GPU fraction, as rolled up; from
    the store where it keeps answers."""
    if not stored_answers():
        return computed_cluster_models(cluster_ids, start, end)

    def dump():
        best, fractions = computed_cluster_models(cluster_ids, start, end)
        return json.dumps([[[*k, v] for k, v in best.items()], [[*k, v] for k, v in fractions.items()]]).encode()
    best, fractions = json.loads(window_body(start, end, _key("advice-models", cluster_ids, start, end), dump))
    return {(c, r): m for c, r, m in best}, {(m, p): f for m, p, f in fractions}


def computed_cluster_models(cluster_ids, start: datetime, end: datetime):
    """`cluster_models` computed from the rollups."""
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
