"""Allocated-but-idle pods, ranked by idle GPU-hours, and capacity no pod held
(docs/figures.md: idle GPU-hours, efficiency, idle stretch).

Idle samples (utilization under the idle threshold, 5 % by default) are counted at
ingest. This report lists a pod when its average utilization over the window (used ÷
allocated) is under the listing threshold (10 % by default) and its longest unbroken idle
stretch lasts at least the listing minimum (30 minutes by default). Stretches are joined
across hours per device-pod; a pod's longest is the longest over its devices. Whole days are
read from the per-pod day summary, each day one idle block joined exactly as its hours would be.

The page shows the list a page at a time, sorted as asked (`SORTS`); the cost of the pods
shown, and of the capacity no pod held, are priced from usage cells (apps/reports/money.py).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from apps.accounting.usage import reader as rollup_reader
from apps.accounting.core.measures import (block_longest_idle_seconds, efficiency, fold_idle_blocks, share, shown_hours,
                                           shown_ratio)
from apps.accounting.usage.reader import HourTeams
from apps.accounting.core.lines import Cell
from apps.accounting.usage.cells import cluster_name_by_id
from apps.web.params import BadParameters
from apps.accounting.query.filters import ReportFilter



@dataclass(frozen=True)
class IdleOptions:
    max_utilization: float     # ratio: list pods whose used ÷ allocated is below this
    min_idle_minutes: float    # ... and whose longest idle stretch is at least this long


@dataclass
class IdlePod:
    cluster: str
    namespace: str
    pod: str
    team: str
    nodes: list[str]
    gpus_held: float
    allocated_gpu_seconds: float
    used_gpu_seconds: float
    idle_gpu_seconds: float
    longest_idle_seconds: float = 0.0
    first_hour: datetime | None = None
    last_hour: datetime | None = None
    cluster_id: int | None = None

    @property
    def utilization(self) -> float | None:
        """The pod's efficiency over the window (listed pods were always allocated)."""
        return efficiency(self.used_gpu_seconds, self.allocated_gpu_seconds)

    def as_dict(self) -> dict:
        return {
            "cluster": self.cluster, "namespace": self.namespace, "pod": self.pod, "team": self.team,
            "node": ", ".join(self.nodes), "gpus_held": round(self.gpus_held, 6),
            "idle_gpu_hours": shown_hours(self.idle_gpu_seconds),
            "allocated_gpu_hours": shown_hours(self.allocated_gpu_seconds),
            "used_gpu_hours": shown_hours(self.used_gpu_seconds),
            "utilization": shown_ratio(self.utilization),
            "longest_idle_hours": shown_hours(self.longest_idle_seconds),
        }


CSV_COLUMNS = ["cluster", "namespace", "pod", "team", "node", "gpus_held", "idle_gpu_hours",
               "allocated_gpu_hours", "used_gpu_hours", "utilization", "longest_idle_hours"]
MONEY_COLUMNS = ["cost", "idle_cost", "currency"]     # the page's download, for roles that see money

# The page's sort keys (`?sort=`, "-" first for descending) and the value each sorts by.
SORTS = {
    "idle_gpu_hours": lambda p: p.idle_gpu_seconds,
    "utilization": lambda p: p.utilization,
    "gpus_held": lambda p: p.gpus_held,
    "longest_idle": lambda p: p.longest_idle_seconds,
    "pod": lambda p: p.pod,
    "namespace": lambda p: p.namespace,
    "team": lambda p: p.team,
    "cluster": lambda p: p.cluster,
}
DEFAULT_SORT = "-idle_gpu_hours"


def pod_order(p: "IdlePod") -> tuple:
    return (p.cluster, p.namespace, p.pod, p.team)


EVERY_IDLE_POD = (1.0, 0.0)

# Whole days from the per-pod day summary, the rest from the hours (docs/performance.md, "The
# longest reads"); the tests set it False to read every hour, their oracle.
SUMMARY = True  # no listing filter: every pod with idle GPU-time


def parse_idle_options(params, defaults=None) -> IdleOptions:
    """The listing filter; `defaults` (utilization, minutes) when the parameters are absent,
    else the practice defaults of the Idle GPUs page (10 % for 30 minutes, from settings)."""
    errors, values = {}, {}
    utilization, minutes = defaults or (settings.IDLE_LIST_UTILIZATION, settings.IDLE_LIST_MIN_MINUTES)
    for name, default, high in (("max_utilization", utilization, 1.0),
                                ("min_idle_minutes", minutes, None)):
        raw = params.get(name)
        try:
            value = float(raw) if raw not in (None, "") else default
        except ValueError:
            errors[name] = f"{name}={raw!r} is not a number"
            continue
        if not math.isfinite(value) or value < 0 or (high is not None and value > high):
            errors[name] = (f"{name}={raw!r} must lie between 0 and {high}" if high is not None
                            else f"{name}={raw!r} must be a finite number, 0 or more")
        values[name] = value
    if errors:
        raise BadParameters(errors)
    return IdleOptions(**values)


def idle_pods(sel: ReportFilter, opts: IdleOptions) -> list[IdlePod]:
    """A few queries whatever the number of pods: pod totals, cluster names, candidates' idle
    blocks (whole days from the per-pod day summary, the rest from the hours; `SUMMARY`).
    A pod whose namespace changed team in the window is listed once per team, with that
    team's hours (docs/teams-and-relabels.md, "Which team owns an hour")."""
    f, rule = sel.usage_filter(), HourTeams()
    names = cluster_name_by_id()
    pods: dict[tuple[int, str, str, str], IdlePod] = {}
    for t in rollup_reader.pod_totals(f, rule, summary=SUMMARY):
        if not t["idle_s"] or efficiency(t["used_s"], t["gpu_s"]) >= opts.max_utilization:
            continue
        pods[(t["cluster_id"], t["namespace"], t["pod"], t["team"])] = IdlePod(
            cluster=names.get(t["cluster_id"], "?"), namespace=t["namespace"], pod=t["pod"], team=t["team"],
            nodes=[], gpus_held=0.0, allocated_gpu_seconds=t["gpu_s"], used_gpu_seconds=t["used_s"],
            idle_gpu_seconds=t["idle_s"], first_hour=t["first"], last_hour=t["last"], cluster_id=t["cluster_id"],
        )
    if not pods:
        return []
    _fill_stretches(f, pods, rule)
    min_seconds = opts.min_idle_minutes * 60.0
    listed = [p for p in pods.values() if p.longest_idle_seconds >= min_seconds]
    return sorted(listed, key=lambda p: (-p.idle_gpu_seconds, p.cluster, p.namespace, p.pod, p.team))


def _fill_stretches(f, pods, rule):
    blocks = defaultdict(list)
    fractions: dict[tuple, dict[int, float]] = defaultdict(dict)
    nodes: dict[tuple, set[str]] = defaultdict(set)
    wanted = {k[:3] for k in pods}
    for cluster_id, ns, pod, team, device_id, node, fraction, block in (
            rollup_reader.pod_idle_blocks(f, wanted, rule, summary=SUMMARY)):
        key = (cluster_id, ns, pod, team)
        if key not in pods:
            continue
        blocks[(key, device_id)].append(block)
        fractions[key][device_id] = fraction
        if node:
            nodes[key].add(node)
    for (key, _device), device_blocks in blocks.items():
        pod = pods[key]
        pod.longest_idle_seconds = max(pod.longest_idle_seconds,
                                       block_longest_idle_seconds(fold_idle_blocks(device_blocks)))
    for key, pod in pods.items():
        pod.gpus_held = sum(fractions[key].values())
        pod.nodes = sorted(nodes[key])


def pod_cells(sel: ReportFilter, pods: list[IdlePod]) -> list[list[Cell]]:
    """The usage cells of each pod (per GPU model, MIG profile, price class and billing day), in
    one query, to price what the pods shown cost in the window."""
    if not pods:
        return []
    wanted = {(p.cluster_id, p.namespace, p.pod, p.team): i for i, p in enumerate(pods)}
    out: list[list[Cell]] = [[] for _ in pods]
    rows = rollup_reader.pod_cells(sel.usage_filter(), {k[:3] for k in wanted}, HourTeams())
    for r in rows:
        i = wanted.get((r["cluster_id"], r["namespace"], r["pod"], r["team"]))
        if i is None:
            continue
        p = pods[i]
        out[i].append(Cell(cluster_id=p.cluster_id, cluster=p.cluster, namespace=p.namespace, team=p.team,
                           gpu_model=r["gpu_model"], mig_profile=r["mig_profile"], day=r["day"],
                           gpu_seconds=r["gpu_s"] or 0.0, used_gpu_seconds=r["used_s"] or 0.0,
                           idle_gpu_seconds=r["idle_s"] or 0.0, mig_seconds=r["mig_s"] or 0.0,
                           price_class=r["price_class"]))
    return out


@dataclass
class Unallocated:
    cluster: str
    gpu_model: str
    capacity_gpu_seconds: float = 0.0
    unallocated_gpu_seconds: float = 0.0
    cells: list = field(default_factory=list, repr=False)    # the unallocated ones, to price

    @property
    def share(self) -> float | None:
        return share(self.unallocated_gpu_seconds, self.capacity_gpu_seconds)


def unallocated_capacity(sel: ReportFilter) -> list[Unallocated]:
    """Capacity no pod held, per cluster and GPU model (fleet-wide: not for team leads), with
    the unallocated usage cells that price it."""
    clusters = cluster_name_by_id()
    rows = rollup_reader.unallocated_rows(sel.usage_filter(), set(clusters))
    out: dict[tuple[str, str], Unallocated] = {}
    for r in rows:
        name = clusters.get(r["cluster_id"], "?")
        u = out.get((name, r["gpu_model"])) or out.setdefault((name, r["gpu_model"]), Unallocated(name, r["gpu_model"]))
        u.capacity_gpu_seconds += r["cap_s"] or 0.0
        if r["free_s"]:
            u.unallocated_gpu_seconds += r["free_s"]
            u.cells.append(Cell(cluster_id=r["cluster_id"], cluster=name, namespace="", team="",
                                gpu_model=r["gpu_model"], mig_profile=r["mig_profile"], day=r["day"],
                                gpu_seconds=r["free_s"], mig_seconds=r["free_mig_s"] or 0.0,
                                price_class=r["price_class"]))
    return [out[k] for k in sorted(out)]
