"""Right-sizing rows: one function feeding the page, the team page, the API and the CSV
(docs/advice-and-alerts.md, "Right-sizing"). The rules are in `rightsizing.py`; this reads
the workloads' usage through `apps.accounting.usage.workloads`, prices with the rate card and
writes the YAML."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone as dt_timezone
from decimal import Decimal

from django.conf import settings
from django.utils import timezone

from apps.accounting.core.rounding import present
from apps.accounting.core.measures import gpu_hours, hours_of, shown_hours, shown_ratio
from apps.accounting.query.filters import WORKLOAD_HOURS, ReportFilter, max_window_days
from apps.accounting.query.presets import window_text
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.usage.workloads import WorkloadUsage, workload_usage
from apps.accounting.usage.team_mapping import team_resolver
from apps.accounting.forecast.teams import ClusterMark, cluster_marks

from apps.recommendations.rightsizing import rules as rs
from apps.recommendations.advice import PRICE_CLASS, make_rater, window_for
from apps.recommendations.mig_profiles import mig_model, profile_named

from apps.accounting.pricing.rates import rate_basis_for, rate_for
from apps.teams.access import money_covers

SCALABLE = ("Deployment", "StatefulSet", "ReplicaSet")
__all__ = ["RightsizeQuery", "rightsizing_rows", "CSV_COLUMNS", "PRICE_CLASS", "params_from_settings"]


@dataclass(frozen=True)
class RightsizeQuery:
    cluster: str | None = None
    teams: frozenset[str] | None = None   # None: every team (team leads get theirs)
    team: str | None = None               # one team only
    money: bool = True
    money_teams: frozenset[str] | None = None   # whose money (`access.money_scope`; None: every team's)
    window_days: int | None = None
    start: datetime | None = None         # an explicit window (the team page's), else the trailing days
    end: datetime | None = None
    now: datetime | None = None

    @classmethod
    def of(cls, f: ReportFilter) -> RightsizeQuery:
        """Right-sizing for a parsed query string (`apps.accounting.query.filters.filter_from`, trailing)."""
        return cls(cluster=f.cluster, teams=f.teams, team=f.team, money=f.money_role, money_teams=f.money_teams,
                   window_days=f.window_days, start=f.start, end=f.end)


def params_from_settings() -> rs.Params:
    return rs.Params(headroom=settings.RIGHTSIZE_HEADROOM, share_replicas=settings.RIGHTSIZE_SHARE_REPLICAS,
                     hami=settings.RIGHTSIZE_HAMI)


class _Fractions:
    """(model, MIG profile) → the profile's share of the GPU: compute slices ÷ the model's
    (docs/accounting.md), for pricing a profile without a rate of its own."""

    def __init__(self, held: dict):
        self.held = held

    def get(self, key):
        if key in self.held:
            return self.held[key]
        model = mig_model(key[0])
        profile = profile_named(model, key[1]) if model else None
        return profile.slices / model.max_slices if profile else None


def workload_yaml(u: WorkloadUsage, advice: rs.Advice) -> str:
    """The change to apply, as YAML with the old value in a comment."""
    where = f"{u.workload_kind} {u.workload_name} in namespace {u.namespace}"
    if advice.action == rs.RELEASE:
        # a release is a change to apply, never a comment (docs/advice-and-alerts.md, "The YAML")
        if u.workload_kind in SCALABLE:
            return f"# {where}: never used its GPU; scale it to zero\nspec:\n  replicas: 0\n"
        if u.workload_kind == "Notebook":
            return (f"# {where}: never used its GPU; stop it (Kubeflow scales it to zero)\n"
                    f"metadata:\n  annotations:\n    kubeflow-resource-stopped: \"true\"\n")
        if u.workload_kind in ("Job", "CronJob"):
            return f"# {where}: never used its GPU; suspend it\nspec:\n  suspend: true\n"
        return (f"# {where}: never used its GPU; in each container that asks for one, remove the request\n"
                f"resources:\n  limits:\n    {advice.resource_now}: null   # removes it (was 1)\n")
    if advice.action == rs.HAMI:
        return (f"# {where}: in each container that asks for a GPU (HAMi)\n"
                f"resources:\n  limits:\n    nvidia.com/gpu: 1\n    nvidia.com/gpucores: {advice.hami.cores}\n"
                f"    nvidia.com/gpumem: {advice.hami.memory_mib}   # instead of {advice.resource_now}\n")
    if advice.resource_advised is None:
        return ""
    return (f"# {where}: in each container that asks for a GPU\n"
            f"resources:\n  limits:\n    {advice.resource_advised}: 1   # instead of {advice.resource_now}: 1\n")


def _iso(t: datetime) -> str:
    return t.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z")


def _round(value, digits=4):
    return None if value is None else round(value, digits)


def assess(u: WorkloadUsage, window: tuple[datetime, datetime], params: rs.Params, rate, money: bool) -> dict:
    observed = rs.Observed(
        gpu_model=u.gpu_model, mig_profile=u.mig_profile, gpu_fraction=u.gpu_fraction, hours=u.hours,
        devices_per_pod=u.devices_per_pod, used_gpu_seconds=u.used_gpu_seconds, gpu_seconds=u.gpu_seconds,
        idle_gpu_seconds=u.idle_gpu_seconds, activity_p95=u.activity_p95,
        fb_peak_mib=u.fb_peak_mib, fb_p95_mib=u.fb_p95_mib)
    advice = rs.advise(observed, params)
    history_hours = hours_of((window[1] - max(window[0], u.first_hour)).total_seconds())
    window_hours = hours_of((window[1] - window[0]).total_seconds())
    instance_hours = gpu_hours(u.mig_seconds if u.mig_profile else u.gpu_seconds)
    now_rate = rate(u.gpu_model, u.mig_profile)
    advised = None
    if now_rate is not None:
        if advice.action == rs.RELEASE:
            advised = (Decimal(0), now_rate[1])
        elif advice.action == rs.MIG:
            advised = rate(u.gpu_model, advice.profile)
        elif advice.action == rs.SHARE:
            whole = rate(u.gpu_model, "")
            advised = (whole[0] / Decimal(params.share_replicas), whole[1]) if whole else None
        elif advice.action == rs.HAMI:
            # GPU-hours held are already the share held (1 on a whole GPU): the rate scales by
            # the advised share over it (docs/advice-and-alerts.md, "Right-sizing").
            held = Decimal(str(u.gpu_fraction if rs.on_hami(observed) else 1.0))
            advised = (now_rate[0] * Decimal(str(advice.hami.share)) / held, now_rate[1])
        else:
            advised = now_rate
    cost_now = cost_advised = saving = currency = None
    if now_rate is not None and advised is not None and advised[1] == now_rate[1]:
        currency = now_rate[1]
        cost_now = rs.monthly(now_rate[0], instance_hours, window_hours, currency)
        cost_advised = rs.monthly(advised[0], instance_hours, window_hours, currency)
        saving = cost_now - cost_advised
    return {
        "cluster": None, "namespace": u.namespace, "team": None,
        "workload_kind": u.workload_kind, "workload_name": u.workload_name, "pods": u.pods,
        "gpu_model": u.gpu_model, "mig_profile": u.mig_profile, "resource_now": advice.resource_now,
        "hours_observed": u.hours, "history_hours": round(history_hours, 3),
        "allocated_gpu_hours": shown_hours(u.gpu_seconds), "instance_hours": round(instance_hours, 6),
        "activity": shown_ratio(u.activity), "activity_p95": _round(u.activity_p95),
        "fb_peak_mib": _round(u.fb_peak_mib, 1), "fb_p95_mib": _round(u.fb_p95_mib, 1),
        "action": advice.action, "action_text": advice.text, "profile": advice.profile,
        "resource_advised": advice.resource_advised, "reason": advice.reason, "confidence": advice.confidence,
        "hami_gpucores": advice.hami.cores if advice.hami else None,
        "hami_gpumem_mib": advice.hami.memory_mib if advice.hami else None,
        "in_totals": advice.confidence != rs.LOW,
        "monthly_cost_now": present(cost_now, currency) if money else None,
        "monthly_cost_advised": present(cost_advised, currency) if money else None,
        "monthly_saving": present(saving, currency) if money else None,
        "currency": currency if money else None,
        "window_start": _iso(window[0]), "window_end": _iso(window[1]),
        "yaml": workload_yaml(u, advice),
        "_saving": saving if money else None,
        "_freed_gpu_hours": _freed_gpu_hours(u, advice, params),
    }


def _freed_gpu_hours(u: WorkloadUsage, advice: rs.Advice, params: rs.Params) -> float:
    """The GPU-hours the advice would have freed in the window: all of them for a release, the
    part of the GPU given back for a smaller slice or a share. What orders the rows of roles that
    see no money (the largest first), so a viewer's top five are the largest, not the first by name."""
    held = gpu_hours(u.gpu_seconds)
    if advice.action == rs.RELEASE:
        return held
    if advice.action == rs.SHARE:
        return held * (1 - 1 / params.share_replicas)
    if advice.action == rs.MIG and advice.profile and u.gpu_fraction:
        model = mig_model(u.gpu_model)
        profile = profile_named(model, advice.profile) if model else None
        if profile is not None:
            return held * max(0.0, 1 - (profile.slices / model.max_slices) / u.gpu_fraction)
    return 0.0


def default_days() -> int:
    """The trailing window without `window_days`: ADVICE_WINDOW_DAYS, never past right-sizing's
    own limit (MAX_RIGHTSIZING_DAYS, docs/security.md, "No request ties up the portal")."""
    return min(settings.ADVICE_WINDOW_DAYS, max_window_days(WORKLOAD_HOURS))


def windows(q: RightsizeQuery, now: datetime) -> list[tuple[ClusterMark, tuple[datetime, datetime]]]:
    """Each cluster the query reads with the hours it reads of it: the trailing days up to its
    ingest watermark, or the explicit window never past the hours ingested (a cluster whose
    window is then empty is left out)."""
    days = q.window_days or default_days()
    clusters = [c for c in cluster_marks() if not q.cluster or c.name == q.cluster]
    out = []
    for cluster in clusters:
        window = window_for(cluster, now, days)
        if q.start and q.end:   # an explicit window, never past the hours ingested
            window = (q.start, min(q.end, window[1]))
            if window[0] >= window[1]:
                continue
        out.append((cluster, window))
    return out


def measured_window(q: RightsizeQuery, now: datetime | None = None) -> tuple[datetime, datetime] | None:
    """The window the rows are measured over, as one stretch (the earliest start to the latest
    end of the clusters read: each cluster's ends at its ingest watermark); None when none is read."""
    read = windows(q, now or q.now or timezone.now())
    if not read:
        return None
    return min(w[0] for _, w in read), max(w[1] for _, w in read)


def window_said(q: RightsizeQuery, now: datetime | None = None) -> str:
    """The measured window in words, as every surface states it: '2026-11-22 00:00 CET –
    2026-11-28 15:00 CET (6.62 days)'."""
    read = windows(q, now or q.now or timezone.now())
    if not read:
        return "no hours ingested"
    window = measured_window(q, now)
    said = window_text(*window, billing_zone())
    if len({w for _, w in read}) == 1:
        return said
    # clusters ingested up to different hours: each is measured up to its own last hour
    if q.start is None:
        days = q.window_days or default_days()
        return f"the last {days} days up to each cluster's last ingested hour ({said.rsplit(' (', 1)[0]})"
    return f"{said}, each cluster up to its last ingested hour"


def rightsizing_rows(q: RightsizeQuery, rate_fn=None, basis_fn=None) -> list[dict]:
    """Every workload the query may see, the largest saving first. `rate_fn`/`basis_fn`
    default to the rate card's `rate_for`/`rate_basis_for`."""
    if rate_fn is None:
        rate_fn, basis_fn = rate_for, rate_basis_for
    now = q.now or timezone.now()
    today = now.astimezone(billing_zone()).date()
    params = params_from_settings()
    read = windows(q, now)
    resolver = team_resolver([c.pk for c, _ in read])
    wanted = frozenset({q.team}) if q.team is not None else q.teams
    # the SQL reads only namespaces that ever belonged to the teams asked for; each row is still resolved
    namespaces = resolver.namespaces_of(wanted) if wanted is not None else None
    rows = []
    for cluster, window in read:
        usage = workload_usage([cluster.pk], *window, namespaces=namespaces)
        held = {(u.gpu_model, u.mig_profile): u.gpu_fraction for u in usage if u.mig_profile}
        rate = make_rater(today, rate_fn, basis_fn, _Fractions(held))
        teams = {}
        for u in usage:
            if u.namespace not in teams:
                teams[u.namespace] = resolver.team(cluster.pk, u.namespace, today)
            team = teams[u.namespace]
            if (q.teams is not None and team not in q.teams) or (q.team is not None and team != q.team):
                continue
            row = assess(u, window, params, rate, q.money and money_covers(q.money_teams, {team}))
            row["cluster"], row["team"] = cluster.name, team
            rows.append(row)
    rows.sort(key=lambda r: (r["_saving"] is None, -(r["_saving"] or 0), -r["_freed_gpu_hours"], r["cluster"],
                             r["namespace"],
                             r["workload_kind"], r["workload_name"], r["gpu_model"], r["mig_profile"]))
    return rows


def total_saving(rows: list[dict], *, low_confidence: bool = False) -> list[tuple[Decimal, str]]:
    """What the rows could save per month, per currency (rows never add currencies): the headline
    leaves out the workloads held under a day (low confidence, `in_totals` false: shown apart,
    docs/advice-and-alerts.md, "What a saving is"); `low_confidence=True` totals those alone."""
    totals: dict[str, Decimal] = {}
    for r in rows:
        if r["in_totals"] == low_confidence:
            continue
        if r["_saving"] is not None and r["_saving"] > 0:
            totals[r["currency"]] = totals.get(r["currency"], Decimal(0)) + r["_saving"]
    return sorted(((v, c) for c, v in totals.items()), key=lambda t: t[1])


def public(row: dict) -> dict:
    return {k: v for k, v in row.items() if not k.startswith("_")}


CSV_COLUMNS = [
    "cluster", "namespace", "team", "workload_kind", "workload_name", "pods", "gpu_model", "mig_profile",
    "resource_now", "hours_observed", "history_hours", "allocated_gpu_hours", "instance_hours", "activity",
    "activity_p95", "fb_peak_mib", "fb_p95_mib", "action", "profile", "resource_advised", "hami_gpucores",
    "hami_gpumem_mib", "reason", "confidence", "in_totals",
    "monthly_cost_now", "monthly_cost_advised", "monthly_saving", "currency", "window_start", "window_end", "yaml",
]
