"""`make demo`: a simulated cluster since the first of last month, with one login per role.

The story (docs/demo.md): last month closed with its frozen statement and a late-data
adjustment on this month's; a re-org mid-month; MIG and time-sliced GPUs; a spot pool;
budget and idle alerts fired; the advice snapshot taken.

With Debian's prometheus installed the history goes through a real Prometheus (backfilled
once, cached under var/); without it the simulator's samples are handed to the same rollup
code, skipping only the HTTP fetch.
"""
from __future__ import annotations

import bisect
import contextlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone as djtz

from apps.accounting.actions.periods import do_close_period
from apps.accounting.core.periods import period_of
from apps.accounting.models import NodePool, Rate
from apps.accounting.models.rates import PriceClass
from apps.accounting.calendar.zone import billing_zone
from apps.clusters.models import Cluster
from apps.ingest.pipeline import ChunkData, ingest
from apps.ingest.rollup import Series
from apps.teams.access import ROLES
from apps.teams.models import AuditEvent, Team

DEMO_CLUSTER = "demo"
LOGINS = {  # user -> (role, password)
    "admin": ("admin", "admin-demo"),
    "finance": ("finance", "finance-demo"),
    "lead": ("team_lead", "lead-demo"),
    "viewer": ("viewer", "viewer-demo"),
}
LEAD_TEAM = "research"
INTERVAL_SECONDS = 300          # five-minute samples keep seven weeks of history quick to load
DEMO_CHUNK_HOURS = 24
LATE_HOURS = 6                  # last month's last hours reach Prometheus after the close
CLOSED_AFTER_MONTH_START = timedelta(hours=9)   # finance closes last month at 09:00 on the 1st
SPOT_HOSTS = "gpu-node-02"      # an H100 node bought as spot capacity
BUDGET_SHARES = {"research": Decimal("0.9"), "search": Decimal("1.2")}   # budget = share × spend so far
IDLE_ALERT_MINUTES = 180
LOADED_ACTION = "demo.loaded"
CLAIM_HOURS_AGO = 24
PENDING_CLAIM = ("sandbox", "research")   # the one claim the demo leaves for the admin
RATES = Path(__file__).resolve().parents[1] / "accounting" / "fixtures" / "rates.example.csv"

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
    "kube_pod_owner": "pod_owner",
    "kube_replicaset_owner": "replicaset_owner",
    "kube_job_owner": "job_owner",
    "kube_pod_labels": "notebook_labels",
    # HAMi's series, under the roles ingest asks for them (apps/ingest/queries.py)
    "hami_vgpu_core_allocated_ratio": "hami_core",
    "hami_vgpu_memory_allocated_bytes": "hami_memory",
    "hami_gpu_core_limit_ratio": "hami_gpu_cores",
    "hami_gpu_memory_limit_bytes": "hami_gpu_memory",
    "hami_container_device_utilization_ratio": "hami_util",
    "hami_vgpu_memory_used_bytes": "hami_memory_used",
}


class SimulatorFetcher:
    """Feeds a scenario's series to the pipeline chunk by chunk, as Prometheus would answer."""

    def __init__(self, scenario):
        from .emit import iter_series

        self.dcgm: dict[str, list[Series]] = {r: [] for r in DCGM_ROLES.values()}
        self.kube_state: dict[str, list[Series]] = {r: [] for r in KSM_ROLES.values()}
        self._times: dict[int, list[int]] = {}
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

    def _cut(self, groups, window):
        out = {}
        for role, series in groups.items():
            kept = []
            for s in series:
                times = self._times.get(id(s))
                if times is None:
                    times = self._times[id(s)] = [t for t, _ in s.samples]   # in time order, as emitted
                lo, hi = bisect.bisect_left(times, window.start), bisect.bisect_left(times, window.end)
                if hi > lo:
                    kept.append(Series(s.labels, s.samples[lo:hi]))
            out[role] = kept
        return out

    def __call__(self, window) -> ChunkData:
        return ChunkData(dcgm=self._cut(self.dcgm, window), kube_state=self._cut(self.kube_state, window))


def demo_scenario(start: int, end: int, relabel_at: int | None = None):
    """The demo cluster's history over [start, end): MIG, time-sliced notebooks, a forgotten
    notebook on an H100 for the last three days, and `batch` moving from team platform to data
    at `relabel_at` (a mid-month re-org)."""
    from .builders import build_scenario

    scenario = build_scenario(name="demo", start=start, hours=(end - start) // 3600, interval_seconds=INTERVAL_SECONDS,
                              spelling="exported", hostname_label="hostname", seed=2026, nodes=4, gpus_per_node=4,
                              mig_nodes=1, time_slicing=True, idle_notebook_hours=72, dra_claim=True,
                              hami=True, right_sizable=True)
    if relabel_at is not None:
        scenario.namespace_relabels = {"batch": [(relabel_at, "data")]}
    # the unlabelled sandbox starts claiming team research a day before the end: on a cluster
    # whose claims need approval, it waits in the admin's queue
    claim_at = end - CLAIM_HOURS_AGO * 3600
    if claim_at > start:
        scenario.namespace_relabels["sandbox"] = [(claim_at, PENDING_CLAIM[1])]
    return scenario


@dataclass(frozen=True)
class Story:
    """The demo's calendar, in unix seconds: history from `start` to `end` (the last whole
    hour), the closed month before `month_start`, late data from `late_from` that arrives after
    the close, and the re-org at `relabel_at`."""
    start: int
    end: int
    month_start: int
    late_from: int | None
    relabel_at: int
    closed_period: str | None


def plan_story(now: datetime, hours: int | None = None) -> Story:
    """By default the history starts on the first of last month (billing zone), so last month
    can be closed with data; `hours` shortens or lengthens it."""
    zone = billing_zone()
    end = int(now.timestamp()) // 3600 * 3600
    local = now.astimezone(zone)
    month_start = int(local.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp())
    prev_local = (local.replace(day=1) - timedelta(days=1)).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    start = int(prev_local.timestamp()) if hours is None else end - hours * 3600
    # last month is closed when the history holds it (from before its last LATE_HOURS on)
    closes = start <= month_start - LATE_HOURS * 3600 and month_start < end
    # the re-org halfway through the open month (or through the history, early in a month)
    since = month_start if end - month_start >= 2 * 3600 else start
    relabel_at = since + (end - since) // 2 // 3600 * 3600
    return Story(start=start, end=end, month_start=month_start,
                 late_from=month_start - LATE_HOURS * 3600 if closes else None, relabel_at=relabel_at,
                 closed_period=period_of(prev_local.date()) if closes else None)


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


def load_demo(hours: int | None = None, log=print, progress=None, now: datetime | None = None) -> Cluster:
    """The whole story: rate card and pools, the history ingested up to a few hours before last
    month's end, last month closed, the late hours arriving (an adjustment on this month's
    statement), then budgets, alerts and the advice snapshot, as beat would have made them."""
    now = now or djtz.now()
    story = plan_story(now, hours)
    scenario = demo_scenario(story.start, story.end, story.relabel_at)
    workdir = Path(settings.BASE_DIR) / "var" / "demo-prometheus"
    workdir.mkdir(parents=True, exist_ok=True)
    admin = User.objects.get(username="admin")
    set_up_pricing(log, since=_dt(story.start))
    with _prometheus_for(scenario, workdir, log) as server:
        url = server.url if server else "http://127.0.0.1:9090"
        cluster, _ = Cluster.objects.update_or_create(name=DEMO_CLUSTER, defaults={"prometheus_url": url})
        NodePool.objects.get_or_create(cluster=cluster, name="spot", defaults={
            "host_pattern": SPOT_HOSTS, "price_class": PriceClass.SPOT})
        fetcher = None if server else SimulatorFetcher(scenario)
        first_end = story.late_from or story.end
        run = ingest(cluster, _dt(story.start), _dt(first_end), trigger="demo", fetcher=fetcher, progress=progress,
                     chunk_hours=DEMO_CHUNK_HOURS)
        log(f"ingested {run.rows_written} rollup rows from {run.samples_read} samples "
            f"({_dt(story.start):%Y-%m-%d %H:%M} → {_dt(first_end):%Y-%m-%d %H:%M} UTC)")
        if story.closed_period:
            closed = do_close_period(story.closed_period, actor=User.objects.get(username="finance"))
            # finance closed it on the 1st, as the story tells (docs/demo.md), not when the demo started
            closed.closed_at = min(_dt(story.month_start) + CLOSED_AFTER_MONTH_START, now)
            closed.save(update_fields=["closed_at"])
            log(f"closed {story.closed_period}; then {LATE_HOURS} late hours of it arrive")
            run = ingest(cluster, _dt(story.late_from), _dt(story.end), trigger="demo", fetcher=fetcher,
                         progress=progress, chunk_hours=DEMO_CHUNK_HOURS)
            log(f"ingested {run.rows_written} more rollup rows up to {_dt(story.end):%Y-%m-%d %H:%M} UTC")
    _claims_need_approval(cluster, admin, log)
    set_cost_centres(log)
    _budgets_and_alerts(admin, now, log)
    from apps.recommendations.snapshots import do_snapshot_recommendations

    log(f"advice snapshot: {do_snapshot_recommendations(now=now)} rows")
    AuditEvent.objects.create(actor=admin, action=LOADED_ACTION, target=DEMO_CLUSTER,
                              new_value={"start": story.start, "end": story.end, "closed": story.closed_period})
    # The demo's Prometheus stops with the command; keep the cluster pointing nowhere live.
    return cluster


def is_loaded() -> bool:
    return AuditEvent.objects.filter(action=LOADED_ACTION, target=DEMO_CLUSTER).exists()


def _dt(ts: int) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def set_up_pricing(log, since: datetime | None = None) -> None:
    """The example rate card, when there is none. In the story it was imported before the
    history begins (`since`): its change is dated then, so a month the demo closes says it was
    priced with a card changed before the close, not after it (docs/demo.md)."""
    if not Rate.objects.exists():
        call_command("import_rates", str(RATES))
        if since is not None:
            Rate.history.all().update(history_date=since)
        log(f"imported the example rate card {RATES.name}")


# The story's teams bill to these cost centres (the workbook's "Cost centre" column).
COST_CENTRES = {"research": "CC-4100 Research", "search": "CC-4200 Search", "platform": "CC-4300 Platform",
                "data": "CC-4400 Data"}


def set_cost_centres(log) -> None:
    """Each story team's cost centre, where none is set yet (an admin's own value is kept)."""
    from apps.teams.models import Team

    named = 0
    for team in Team.objects.filter(name__in=COST_CENTRES, cost_centre=""):
        team.cost_centre = COST_CENTRES[team.name]
        team.save(update_fields=["cost_centre"])
        named += 1
    if named:
        log(f"cost centres set for {named} team{'' if named == 1 else 's'}")


def _claims_need_approval(cluster, admin, log) -> None:
    """The cluster's team labels count only once approved (label trust `approve`): every claim
    its history holds is approved from its first hour, except the sandbox's fresh claim."""
    from apps.teams.claims import do_decide_claim, pending_claims
    from apps.teams.models import LabelClaim, Namespace

    cluster.label_trust = Cluster.LabelTrust.APPROVE
    cluster.save(update_fields=["label_trust"])
    for claim in pending_claims():
        if (claim.namespace, claim.team_label) != PENDING_CLAIM:
            do_decide_claim(Namespace.objects.get(pk=claim.namespace_id), claim.team_label,
                            LabelClaim.Decision.APPROVED, claim.since, actor=admin)
    log(f"team claims: {len(pending_claims())} waiting for approval (Team claims page)")


def _budgets_and_alerts(admin, now: datetime, log) -> None:
    """Budgets set so this month's spend has crossed them (research past 100 %, search past
    80 %), then the beat's alert check once: budget alerts and the forgotten notebook."""
    from apps.recommendations.alerts import check_budgets, check_idle, month_start, team_spend
    from apps.recommendations.budgets import do_set_team_budget
    from apps.recommendations.models import TeamBudget

    for name, share in BUDGET_SHARES.items():
        team = Team.objects.get(name=name)
        probe = TeamBudget(team=team, unit=TeamBudget.Unit.MONEY, currency="USD", monthly_amount=Decimal(1))
        spent, _ = team_spend(probe, month_start(now), now)
        if not spent:
            continue
        amount = max(Decimal(1), (spent * share).quantize(Decimal(1)))
        do_set_team_budget(admin, team, unit=TeamBudget.Unit.MONEY, currency="USD", monthly_amount=amount)
    # Only the long stretches, over the last four days: the forgotten notebook stands out.
    raised = check_budgets(now) + check_idle(now, lookback_hours=96, min_minutes=IDLE_ALERT_MINUTES)
    log(f"alerts: {sum(r.created for r in raised)} raised "
        f"({', '.join(sorted({r.alert.kind for r in raised})) or 'none'})")


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
