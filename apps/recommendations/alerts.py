"""Budget and idle-GPU alerts: detection, deduplication, recording, and queueing deliveries.

Each alert has a unique key, so repeated beat runs raise it once: `budget:<team>:<YYYY-MM>:<pct>`
per threshold per team per billing month, `idle:<cluster id>:<namespace>/<pod>:<start>` per pod
idle episode. Deliveries (e-mail, webhook) are separate Celery tasks queued after the alert is
committed (`tasks.dispatch`); a failing channel never fails the beat run that raised the alert.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone as dt_timezone
from decimal import ROUND_FLOOR, Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.accounting.core.periods import period_of
from apps.accounting.core.measures import IdleHour, idle_stretches, shown_hours
from apps.accounting.ledger.money import team_month
from apps.accounting.usage.reader import HourTeams, idle_hours_since
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.usage.cells import UsageFilter, group_cells, usage_cells
from apps.accounting.text import duration_text
from apps.teams.models import AuditEvent

from .models import Alert, AlertDelivery, TeamBudget

log = logging.getLogger(__name__)

BUDGET_THRESHOLDS_PERCENT = (80, 100)


def month_start(now: datetime) -> datetime:
    local = now.astimezone(billing_zone())
    return local.replace(day=1, hour=0, minute=0, second=0, microsecond=0).astimezone(dt_timezone.utc)


def crossed_thresholds(spent: Decimal, budget: Decimal, thresholds=BUDGET_THRESHOLDS_PERCENT) -> list[int]:
    """Thresholds (percent) that `spent` has reached; pure."""
    if budget <= 0:
        return []
    return [pct for pct in thresholds if spent * 100 >= budget * pct]


def team_spend(budget: TeamBudget, start: datetime, end: datetime) -> tuple[Decimal | None, str]:
    """Allocated GPU-hours from `start` to `end`; or, for a money budget, the team's money on the
    month's ledger (`ledger.money.team_month`): the chargeback statement's figure for the month,
    adjustments included, to the minor unit. None when the money cannot be compared: nothing of
    the team's usage is priced, or it is priced in another currency than the budget's."""
    if budget.unit == TeamBudget.Unit.GPU_HOURS:
        cells = usage_cells(UsageFilter(start=start, end=end, teams=frozenset({budget.team.name})))
        seconds = sum(r.allocated_gpu_seconds for r in group_cells(cells, "team"))
        return Decimal(str(shown_hours(seconds))), "GPU-hours"
    month = team_month(period_of(start.astimezone(billing_zone()).date()), budget.team.name)
    costs = month["costs_by_currency"]
    if not costs:
        return (None if month["unpriced_gpu_hours"] else Decimal("0")), budget.currency
    if budget.currency not in costs or len(costs) > 1:
        return None, budget.currency
    return Decimal(costs[budget.currency]), budget.currency


@dataclass
class Raised:
    alert: Alert
    created: bool
    delivery_ids: list[int]


def channels_for(budget: TeamBudget | None) -> list[tuple[str, str]]:
    email_to = (budget.email_to if budget and budget.email_to else ",".join(settings.ALERT_EMAIL_TO)).strip()
    webhook = (budget.webhook_url if budget and budget.webhook_url else settings.ALERT_WEBHOOK_URL).strip()
    out = []
    if email_to:
        out.append((AlertDelivery.Channel.EMAIL, email_to))
    if webhook:
        out.append((AlertDelivery.Channel.WEBHOOK, webhook))
    return out


def do_raise_alert(*, key: str, kind: str, text: str, fields: dict, channels, team: str = "",
                   cluster_id=None, namespace="", pod="", episode_start=None, episode_end=None) -> Raised:
    """Record an alert once per key, with one pending delivery per channel, and an audit row."""
    with transaction.atomic():
        alert, created = Alert.objects.get_or_create(key=key, defaults=dict(
            kind=kind, text=text, fields=fields, team=team, cluster_id=cluster_id, namespace=namespace,
            pod=pod, episode_start=episode_start, episode_end=episode_end,
        ))
        if not created:
            return Raised(alert, False, [])
        ids = [AlertDelivery.objects.create(alert=alert, channel=channel, target=target).pk
               for channel, target in channels]
        AuditEvent.objects.create(action=f"alert.{kind}", target=key, new_value={"text": text, **fields})
    return Raised(alert, True, ids)


def used_percent(spent: Decimal, budget: Decimal) -> int:
    """The share of the budget spent, in whole percent rounded down: 5,492.52 of 4,943.00 is
    111 %, and 99.6 % stays 99 % (never "100 %" below the budget)."""
    if budget <= 0:
        return 0
    return int((spent * 100 / budget).to_integral_value(rounding=ROUND_FLOOR))


def check_budgets(now: datetime | None = None) -> list[Raised]:
    now = now or timezone.now()
    start = month_start(now)
    month = start.astimezone(billing_zone()).strftime("%Y-%m")
    raised = []
    for budget in TeamBudget.objects.filter(active=True).select_related("team"):
        spent, unit = team_spend(budget, start, now)
        if spent is None:
            log.info("budget of %s: spend cannot be priced, no alert", budget.team.name)
            continue
        for pct in crossed_thresholds(spent, budget.monthly_amount):
            used_pct = used_percent(spent, budget.monthly_amount)
            text = (f"GPU budget: team {budget.team.name} has used {used_pct} % of its {month} budget "
                    f"({budget.shown(spent)} of {budget.shown(budget.monthly_amount)}), past {pct} %.")
            fields = {"team": budget.team.name, "month": month, "threshold_percent": pct, "used_percent": used_pct,
                      "spent": budget.amount_text(spent), "budget": budget.amount_text(budget.monthly_amount),
                      "unit": budget.unit, "currency": budget.currency or None}
            raised.append(do_raise_alert(key=f"budget:{budget.team.name}:{month}:{pct}", kind=Alert.Kind.BUDGET,
                                         text=text, fields=fields, team=budget.team.name,
                                         channels=channels_for(budget)))
    return raised


@dataclass
class IdleEpisode:
    cluster_id: int
    namespace: str
    pod: str
    start: int
    idle_seconds: float
    open: bool
    gpus: float
    gpu_model: str
    team: str = ""


def idle_episodes_since(since: datetime, min_seconds: float, rule: HourTeams | None = None) -> list[IdleEpisode]:
    """Long idle stretches of every device-pod with hours since `since`, one per pod, team and
    start: a stretch never joins hours of two teams, so a pod idle across a re-org is two
    episodes, each its team's (docs/teams-and-relabels.md, "Which team owns an hour")."""
    per_device = defaultdict(list)
    meta = {}
    for cluster_id, device_id, ns, pod, team, hour, prefix, suffix, max_run, whole, fraction, model in (
            idle_hours_since(since, rule or HourTeams())):
        key = (cluster_id, device_id, ns, pod, team)
        per_device[key].append(IdleHour(int(hour.timestamp()), prefix, suffix, max_run, whole))
        meta[key] = (fraction, model)
    episodes: dict[tuple, IdleEpisode] = {}
    for key, hours in per_device.items():
        cluster_id, _device, ns, pod, team = key
        fraction, model = meta[key]
        for e in idle_stretches(hours, min_seconds):
            k = (cluster_id, ns, pod, e.start)
            found = episodes.get(k)
            if found is None:
                episodes[k] = IdleEpisode(cluster_id, ns, pod, e.start, e.idle_seconds, e.open, fraction, model, team)
            else:
                found.gpus += fraction
                found.idle_seconds = max(found.idle_seconds, e.idle_seconds)
                found.open = found.open or e.open
    return sorted(episodes.values(), key=lambda e: (e.cluster_id, e.namespace, e.pod, e.start))


def check_idle(now: datetime | None = None, *, lookback_hours: int | None = None,
               min_minutes: int | None = None) -> list[Raised]:
    """Idle episodes of at least `min_minutes` (ALERT_IDLE_MINUTES) in the last `lookback_hours`
    (ALERT_LOOKBACK_HOURS): one alert each, widened rather than repeated on later runs."""
    now = now or timezone.now()
    since = now.replace(minute=0, second=0, microsecond=0) - timedelta(
        hours=lookback_hours or settings.ALERT_LOOKBACK_HOURS)
    min_seconds = (min_minutes or settings.ALERT_IDLE_MINUTES) * 60.0
    episodes = idle_episodes_since(since, min_seconds)
    if not episodes:
        return []
    budgets = {b.team.name: b for b in TeamBudget.objects.select_related("team")}
    from apps.clusters.models import Cluster
    cluster_names = dict(Cluster.objects.values_list("id", "name"))
    raised = []
    for e in episodes:
        start = datetime.fromtimestamp(e.start, tz=dt_timezone.utc)
        end = start + timedelta(seconds=e.idle_seconds)
        # The same episode seen through another lookback (cut at the window's start, or with
        # late hours backfilled) may appear to start elsewhere: an alert for the same pod and team
        # whose stretch overlaps or touches this one is that episode; widen it, raise nothing.
        touch = timedelta(seconds=60)
        earlier = (Alert.objects.filter(kind=Alert.Kind.IDLE, cluster_id=e.cluster_id, namespace=e.namespace,
                                        pod=e.pod, team=e.team, episode_start__lte=end + touch,
                                        episode_end__gte=start - touch)
                   .order_by("episode_start").first())
        if earlier is not None:
            Alert.objects.filter(pk=earlier.pk).update(episode_start=min(start, earlier.episode_start),
                                                       episode_end=max(end, earlier.episode_end))
            continue
        team = e.team
        minutes = int(e.idle_seconds // 60)
        cluster = cluster_names.get(e.cluster_id, "?")
        text = (f"Idle GPUs: pod {e.namespace}/{e.pod} on {cluster} has held {e.gpus:g} {e.gpu_model} "
                f"GPU{'' if e.gpus == 1 else 's'} idle for {duration_text(e.idle_seconds)} since {start:%Y-%m-%d %H:%M} UTC"
                f"{' and still does' if e.open else ''} (team {team}).")
        fields = {"cluster": cluster, "namespace": e.namespace, "pod": e.pod, "team": team,
                  "gpus": e.gpus, "gpu_model": e.gpu_model, "idle_minutes": minutes,
                  "episode_start": start.isoformat().replace("+00:00", "Z"), "still_idle": e.open}
        raised.append(do_raise_alert(
            key=f"idle:{e.cluster_id}:{e.namespace}/{e.pod}:{e.start}", kind=Alert.Kind.IDLE, text=text,
            fields=fields, team=team, cluster_id=e.cluster_id, namespace=e.namespace, pod=e.pod,
            episode_start=start, episode_end=end, channels=channels_for(budgets.get(team)),
        ))
    return raised
