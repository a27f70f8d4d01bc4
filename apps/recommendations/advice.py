"""Quota advice rows: one query feeding the page, the API and the CSV (docs/conventions.md, "One home per concept").

Per cluster, the window is the `window_days` before the last ingested hour (the cluster's
`ingested_until` watermark, or now when it has none), so hours not yet ingested never count
as idle hours.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone as dt_timezone
from decimal import Decimal

from django.conf import settings
from django.utils import timezone

from apps.accounting.core.rounding import present
from apps.accounting.core.measures import shown_ratio
from apps.accounting.query.filters import ReportFilter
from apps.accounting.pricing.rates import rate_basis_for, rate_for
from apps.accounting.calendar.zone import billing_zone
from apps.clusters.models import Cluster
from apps.teams.access import money_covers
from apps.accounting.usage.team_mapping import team_resolver

from . import estimator as est
from .history import NamespaceHistory, cluster_models, namespace_histories, series
from .kueue import cluster_queue_rows
from .manifests import GPU_QUOTA_RESOURCE, mig_profile_of, resourcequota_yaml
from .models import KIND_CLUSTER_QUEUE, KIND_NAMESPACE, RecommendationSnapshot

PRICE_CLASS = "on_demand"
# A quota last seen longer ago than this before the window's end no longer exists.
QUOTA_GONE_AFTER = timedelta(hours=24)


@dataclass(frozen=True)
class AdviceQuery:
    cluster: str | None = None
    teams: frozenset[str] | None = None   # None: every team (team leads get theirs)
    money: bool = True
    money_teams: frozenset[str] | None = None   # with money: only these teams' rows (docs/security.md)
    window_days: int | None = None
    now: datetime | None = None

    @classmethod
    def of(cls, f: ReportFilter) -> AdviceQuery:
        """The advice of a parsed query string (`apps.accounting.query.filters.filter_from`, trailing)."""
        return cls(cluster=f.cluster, teams=f.teams, money=f.money_role, money_teams=f.money_teams,
                   window_days=f.window_days)

    def money_for(self, teams) -> bool:
        """Whether a row of these teams shows money: all of them in the money scope."""
        return self.money and money_covers(self.money_teams, teams)


def params_from_settings(window_days: int | None = None) -> est.Params:
    return est.Params(
        window_days=window_days or settings.ADVICE_WINDOW_DAYS,
        low_efficiency=settings.ADVICE_LOW_EFFICIENCY,
        at_hard_share=settings.ADVICE_AT_HARD_SHARE,
    )


def floor_hour(t: datetime) -> datetime:
    return t.replace(minute=0, second=0, microsecond=0)


def window_for(cluster: Cluster, now: datetime, days: int) -> tuple[datetime, datetime]:
    end = floor_hour(now)
    if cluster.ingested_until is not None:
        end = min(end, floor_hour(cluster.ingested_until))
    return end - timedelta(days=days), end


def make_rater(day, rate_fn, basis_fn=None, fractions=None):
    """(gpu_model, mig_profile) -> (Decimal hourly rate, currency) or None, memoised.

    A MIG quota counts instances, so its rate is per instance-hour: the profile's own rate
    when the card has one, else the parent model's rate per GPU-hour × the instance's GPU
    fraction (`rate_basis_for` says which basis `rate_for` used)."""
    cache = {}
    fractions = fractions or {}

    def rate(gpu_model: str | None, mig_profile: str):
        if rate_fn is None or not gpu_model:
            return None
        key = (gpu_model, mig_profile)
        if key not in cache:
            found = rate_fn(gpu_model, mig_profile, PRICE_CLASS, day)
            if found is not None:
                hourly = Decimal(str(found[0]))
                if mig_profile and basis_fn is not None and \
                        basis_fn(gpu_model, mig_profile, PRICE_CLASS, day) == "gpu_model":
                    fraction = fractions.get(key)
                    hourly = hourly * Decimal(str(fraction)) if fraction else None
                found = (hourly, found[1]) if hourly is not None else None
            cache[key] = found
        return cache[key]
    return rate


def assess_namespace(h: NamespaceHistory, end: datetime, params: est.Params, rate, fallback_models):
    assessments = []
    for resource in h.resources():
        hard, used, seconds_at_hard, quota_hours = h.quota.get(resource, (None, None, 0.0, 0))
        if hard is not None and h.quota_seen[resource] < end - QUOTA_GONE_AFTER:
            hard = used = None  # the ResourceQuota was deleted: advise as for no quota
        history = est.ResourceHistory(
            resource=resource, hourly=series(h.hourly.get(resource, {}), h.history_start, end),
            hard=hard, used=used, used_peak=h.quota_peak.get(resource) if hard is not None else None, allocated_gpu_seconds=h.allocated_gpu_seconds.get(resource, 0.0),
            used_gpu_seconds=h.used_gpu_seconds.get(resource, 0.0),
            queued_gpu_hours=h.queued_gpu_hours.get(resource, 0.0),
            quota_bound_queued_gpu_hours=h.quota_bound_queued_gpu_hours.get(resource, 0.0),
            seconds_at_hard=seconds_at_hard, quota_hours=quota_hours,
        )
        model = h.dominant_model(resource) or fallback_models.get((h.cluster_id, resource))
        assessments.append(est.assess(history, params, rate(model, mig_profile_of(resource))))
    return assessments


def _round(value, digits=4):
    return None if value is None else round(value, digits)


def resource_dict(a: est.Assessment, previous: dict, money: bool) -> dict:
    e = a.estimate
    return {
        "resource": a.resource, "hard": a.hard, "used": a.used, "used_peak": a.used_peak,
        "p50": _round(e.p50), "p90": _round(e.p90), "p95": _round(e.p95),
        "target": e.target, "lower_bound": _round(e.lower_bound), "upper_bound": _round(e.upper_bound),
        "recommended": a.recommended, "previous_target": previous.get(a.resource),
        "efficiency": shown_ratio(a.efficiency), "at_hard_share": _round(a.at_hard_share),
        "queued_gpu_hours": _round(a.queued_gpu_hours), "verdict": a.verdict, "verdict_text": a.verdict_text,
        "advice_text": a.advice_text, "reason": a.reason,
        "monthly_money_at_stake": present(a.monthly_money_at_stake, a.currency) if money else None,
        "monthly_money_freed": present(a.monthly_money_freed, a.currency) if money else None,
        "currency": a.currency if money and a.monthly_money_at_stake is not None else None,
    }


def build_row(kind, cluster, name, team, window, assessments, previous, money, yaml_text, **extra) -> dict:
    resources = [resource_dict(a, previous, money) for a in assessments]
    headline = next((r for r in resources if r["resource"] in (GPU_QUOTA_RESOURCE, "nvidia.com/gpu")),
                    resources[0] if resources else None)
    verdict = est.worst_verdict([a.verdict for a in assessments])
    reasons = [f"{a.resource}: {a.reason}" for a in assessments if a.verdict == verdict]
    total, currency = est.total_money(assessments)
    freed, _ = est.total_money(assessments, "monthly_money_freed")
    row = {
        "kind": kind, "cluster": cluster.name, "name": name,
        "namespace": name if kind == KIND_NAMESPACE else "",
        "cluster_queue": name if kind == KIND_CLUSTER_QUEUE else "",
        "team": team, "window_start": _iso(window[0]), "window_end": _iso(window[1]),
        "history_days": _round(assessments[0].estimate.days if assessments else 0.0, 3),
        "verdict": verdict, "verdict_text": est.VERDICT_TEXT[verdict], "reason": "; ".join(reasons),
        "monthly_money_at_stake": present(total, currency) if money else None,
        "monthly_money_freed": present(freed, currency) if money else None,
        "currency": currency if money else None,
    }
    for column in ("resource", "hard", "used", "used_peak", "target", "lower_bound", "upper_bound", "p50", "p90", "p95",
                   "recommended", "previous_target", "efficiency", "queued_gpu_hours"):
        row[column] = headline[column] if headline else None
    row.update(extra)
    row["resources"] = resources
    row["yaml"] = yaml_text
    return row


def _iso(t: datetime) -> str:
    return t.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z")


def previous_targets(cluster_ids, today) -> dict[tuple, dict[str, int]]:
    """The latest snapshot before today: (cluster id, kind, name) -> {resource: target}."""
    out: dict[tuple, dict[str, int]] = {}
    rows = (RecommendationSnapshot.objects.filter(cluster_id__in=cluster_ids, day__lt=today,
                                                  day__gte=today - timedelta(days=90))
            .order_by("day").values_list("cluster_id", "kind", "name", "resource", "target"))
    for cluster_id, kind, name, resource, target in rows:
        out.setdefault((cluster_id, kind, name), {})[resource] = target
    return out


def advice_rows(q: AdviceQuery, rate_fn=None, basis_fn=None, *, with_assessments=False) -> list[dict]:
    """Rows for every namespace (and ClusterQueue) the query may see, worst verdict first.
    `rate_fn`/`basis_fn` default to the rate card's `rate_for`/`rate_basis_for`."""
    if rate_fn is None:
        rate_fn, basis_fn = rate_for, rate_basis_for
    now = q.now or timezone.now()
    today = now.astimezone(billing_zone()).date()
    params = params_from_settings(q.window_days)
    clusters = Cluster.objects.all()
    if q.cluster:
        clusters = clusters.filter(name=q.cluster)
    clusters = list(clusters)
    ids = [c.pk for c in clusters]
    resolver = team_resolver(ids)
    previous = previous_targets(ids, today)
    rows = []
    for cluster in clusters:
        window = window_for(cluster, now, params.window_days)
        histories = namespace_histories([cluster.pk], *window)
        fallback, fractions = cluster_models([cluster.pk], *window)
        rate = make_rater(today, rate_fn, basis_fn, fractions)
        teams = {ns: resolver.team(cluster.pk, ns, today) for (_, ns) in histories}
        for (_, ns), h in sorted(histories.items()):
            if q.teams is not None and teams[ns] not in q.teams:
                continue
            assessments = assess_namespace(h, window[1], params, rate, fallback)
            if not assessments:
                continue
            hard = {a.resource: a.recommended for a in assessments}
            yaml_text = resourcequota_yaml(settings.ADVICE_RESOURCEQUOTA_NAME, ns, hard)
            row = build_row(KIND_NAMESPACE, cluster, ns, teams[ns], window, assessments,
                            previous.get((cluster.pk, KIND_NAMESPACE, ns), {}), q.money_for({teams[ns]}), yaml_text)
            if with_assessments:
                row["_assessments"] = assessments
            rows.append(row)
        for cq in cluster_queue_rows(cluster, histories, window, params, rate, fallback):
            members = cq.pop("members")
            if q.teams is not None and not (members and all(teams.get(ns) in q.teams for ns in members)):
                continue
            row = build_row(KIND_CLUSTER_QUEUE, cluster, cq["name"], "", window, cq["assessments"],
                            previous.get((cluster.pk, KIND_CLUSTER_QUEUE, cq["name"]), {}),
                            q.money_for({teams.get(ns) for ns in members}),
                            cq["yaml"], namespaces=members, cohort=cq["cohort"])
            if with_assessments:
                row["_assessments"] = cq["assessments"]
            rows.append(row)
    order = {v: i for i, v in enumerate(est.VERDICTS)}
    rows.sort(key=lambda r: (order[r["verdict"]], r["cluster"], r["kind"], r["name"]))
    return rows


CSV_COLUMNS = [
    "kind", "cluster", "name", "team", "resource", "hard", "used", "used_peak", "p50", "p90", "p95", "target",
    "lower_bound", "upper_bound", "recommended", "previous_target", "efficiency", "queued_gpu_hours",
    "verdict", "reason", "monthly_money_at_stake", "monthly_money_freed", "currency", "window_start", "window_end",
    "history_days", "yaml",
]
