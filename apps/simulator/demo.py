"""`make demo`: a week of a simulated cluster, ingested, with one login per role.

With Debian's prometheus installed the history goes through a real Prometheus (backfilled
once, cached under var/); without it the simulator's samples are handed to the same rollup
code, skipping only the HTTP fetch.
"""
from __future__ import annotations

import contextlib
from datetime import datetime, timezone
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db import transaction

from apps.clusters.models import Cluster
from apps.ingest.pipeline import ChunkData, ingest
from apps.ingest.rollup import Series
from apps.teams.access import ROLES
from apps.teams.models import Team

DEMO_CLUSTER = "demo"
LOGINS = {  # user -> (role, password)
    "admin": ("admin", "admin-demo"),
    "finance": ("finance", "finance-demo"),
    "lead": ("team_lead", "lead-demo"),
    "viewer": ("viewer", "viewer-demo"),
}
LEAD_TEAM = "research"

DCGM_ROLES = {
    "DCGM_FI_DEV_GPU_UTIL": "whole_util",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "mig_util",
    "DCGM_FI_DEV_FB_USED": "fb_used",
    "DCGM_FI_DEV_POWER_USAGE": "power",
    "DCGM_FI_DEV_GPU_TEMP": "temperature",
    "DCGM_FI_DEV_XID_ERRORS": "xid",
}
KSM_ROLES = {
    "kube_pod_container_resource_requests": "requests",
    "kube_pod_status_phase": "phase",
    "kube_namespace_labels": "namespace_labels",
    "kube_resourcequota": "quota",
}


class SimulatorFetcher:
    """Feeds a scenario's series to the pipeline chunk by chunk, as Prometheus would answer."""

    def __init__(self, scenario):
        from .emit import iter_series

        self.dcgm: dict[str, list[Series]] = {r: [] for r in DCGM_ROLES.values()}
        self.kube_state: dict[str, list[Series]] = {r: [] for r in KSM_ROLES.values()}
        for s in iter_series(scenario):
            role = DCGM_ROLES.get(s.metric)
            if role == "whole_util" and s.labels.get("GPU_I_PROFILE"):
                continue
            if role == "mig_util" and not s.labels.get("GPU_I_PROFILE"):
                continue
            if role:
                self.dcgm[role].append(Series(dict(s.labels), list(s.samples)))
            elif s.metric in KSM_ROLES:
                if s.metric == "kube_pod_status_phase" and s.labels.get("phase") != "Pending":
                    continue
                self.kube_state[KSM_ROLES[s.metric]].append(Series(dict(s.labels), list(s.samples)))

    @staticmethod
    def _cut(groups, window):
        out = {}
        for role, series in groups.items():
            out[role] = [Series(s.labels, cut) for s in series
                         if (cut := [(t, v) for t, v in s.samples if window.start <= t < window.end])]
        return out

    def __call__(self, window) -> ChunkData:
        return ChunkData(dcgm=self._cut(self.dcgm, window), kube_state=self._cut(self.kube_state, window))


def demo_scenario(hours: int):
    """A history that ends at the last closed hour, so all of it can be ingested now."""
    import time

    from .builders import build_scenario

    start = (int(time.time()) // 3600 - hours) * 3600
    return build_scenario(name="demo", start=start, hours=hours, interval_seconds=60, spelling="exported",
                          hostname_label="hostname", seed=2026, nodes=4, gpus_per_node=4, mig_nodes=1)


@contextlib.contextmanager
def _prometheus_for(scenario, workdir: Path, log):
    from .promserver import PrometheusUnavailable, find_binaries, serve_scenario

    try:
        find_binaries()
    except PrometheusUnavailable as exc:
        log(f"Prometheus not installed ({exc}); feeding simulator samples directly to the rollup code")
        yield None
        return
    log("backfilling the simulated history into a real Prometheus (cached after the first run)…")
    with serve_scenario(scenario, workdir) as server:
        log(f"Prometheus serving the demo history at {server.url}")
        yield server


def load_demo(hours: int = 168, log=print, progress=None) -> Cluster:
    scenario = demo_scenario(hours)
    start = datetime.fromtimestamp(scenario.start, tz=timezone.utc)
    end = datetime.fromtimestamp(scenario.end, tz=timezone.utc)
    workdir = Path(settings.BASE_DIR) / "var" / "demo-prometheus"
    workdir.mkdir(parents=True, exist_ok=True)
    with _prometheus_for(scenario, workdir, log) as server:
        url = server.url if server else "http://127.0.0.1:9090"
        cluster, _ = Cluster.objects.update_or_create(name=DEMO_CLUSTER, defaults={"prometheus_url": url})
        fetcher = None if server else SimulatorFetcher(scenario)
        run = ingest(cluster, start, end, trigger="demo", fetcher=fetcher, progress=progress)
    log(f"ingested {run.rows_written} rollup rows from {run.samples_read} samples "
        f"({start:%Y-%m-%d %H:%M} → {end:%Y-%m-%d %H:%M} UTC)")
    # The demo's Prometheus stops with the command; keep the cluster pointing nowhere live.
    return cluster


@transaction.atomic
def create_logins() -> dict[str, tuple[str, str]]:
    for role in ROLES:
        Group.objects.get_or_create(name=role)
    for username, (role, password) in LOGINS.items():
        user, _ = User.objects.get_or_create(username=username)
        user.set_password(password)
        user.is_staff = role == "admin"
        user.is_superuser = role == "admin"
        user.save()
        user.groups.set([Group.objects.get(name=role)])
    team, _ = Team.objects.get_or_create(name=LEAD_TEAM)
    team.members.add(User.objects.get(username="lead"))
    return LOGINS
