"""Two teams on one cluster, every kind of row a page or endpoint can show, with names chosen so a
leak is a plain substring: everything of team B carries its marker (default "zebra").

Day D is two days ago (UTC), inside every page's default window; a closed period (D's month minus
two) and an open one (D's month) exist; a rate (currency SEK, so "SEK" anywhere means money shown),
quota history for both namespaces (advice rows), an alert for each team.
"""
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone as dt_timezone
from decimal import Decimal

from django.utils import timezone

from apps.accounting.actions.periods import do_close_period
from apps.accounting.core.periods import period_of, prev_period
from apps.accounting.models import DeviceHealthHour, QuotaHour, Rate, RateImport, UsageHour
from apps.clusters.models import Cluster, Device
from apps.ingest.models import IngestRun
from apps.recommendations.models import Alert, RecommendationSnapshot
from apps.teams.models import Namespace, NamespaceAssignment, Team
from apps.teams.tokens import do_create_api_token
from tests.support.factories import H100, make_role_users, usage_row
from tests.support.factories import make_cluster

CURRENCY = "SEK"
ROLE_USERS = ("viewer", "team_lead", "finance", "admin")


@dataclass
class Names:
    team_a: str = "acme"
    ns_a: str = "acme-train"
    pod_a: str = "acme-pod-0"
    team_b: str = "zebra"
    ns_b: str = "zebra-ns"
    pod_b: str = "zebra-pod-0"
    cost_centre_a: str = "CC-acme"
    cost_centre_b: str = "CC-zebra"
    cluster: str = "gpu-east"


@dataclass
class Seeded:
    names: Names
    users: dict
    tokens: dict
    cluster: Cluster
    rate: Rate
    day: date
    open_period: str
    closed_period: str
    extra: dict = field(default_factory=dict)


def day_d() -> date:
    return timezone.now().astimezone(dt_timezone.utc).date() - timedelta(days=2)


def at(day, hour):
    return datetime.combine(day, time(hour), tzinfo=dt_timezone.utc)


def make_users(team_a: Team):
    """The role users (tests/support/factories.py; the admin a superuser), each with a token."""
    users = make_role_users(ROLE_USERS, admin_superuser=True)
    # a personal read-write token each: DRF's older keys are off by default (docs/api.md, "Tokens")
    tokens = {role: do_create_api_token(u, name="tests", days=365, read_only=False)[1] for role, u in users.items()}
    team_a.members.add(users["team_lead"])
    return users, tokens


def seed(names: Names | None = None) -> Seeded:
    n = names or Names()
    now = timezone.now()
    d = day_d()
    cluster = make_cluster(n.cluster, prometheus_url="http://127.0.0.1:9/", ingested_until=now)
    team_a = Team.objects.create(name=n.team_a, cost_centre=n.cost_centre_a)
    team_b = Team.objects.create(name=n.team_b, cost_centre=n.cost_centre_b)
    users, tokens = make_users(team_a)
    for ns_name, team in ((n.ns_a, team_a), (n.ns_b, team_b)):
        ns = Namespace.objects.create(cluster=cluster, name=ns_name)
        NamespaceAssignment.objects.create(namespace=ns, team=team, effective_from=date(2020, 1, 1))

    devices = [Device.objects.create(cluster=cluster, uuid=f"GPU-{i}", host=f"node-{i}", gpu_index="0",
                                     model_name=H100, first_seen=at(d, 0), last_seen=at(d, 23)) for i in range(3)]
    rows, health = [], []
    for hour in range(8, 14):
        for dev, ns, pod, used in ((devices[0], n.ns_a, n.pod_a, 2700.0), (devices[1], n.ns_b, n.pod_b, 36.0),
                                   (devices[2], "", "", 0.0)):
            idle = 3600.0 if ns and used < 100 else 0.0
            rows.append(usage_row(
                dev, ns, at(d, hour), pod=pod, gpu_seconds=3600.0, used_gpu_seconds=used,
                idle_gpu_seconds=idle, idle_prefix_seconds=idle, idle_suffix_seconds=idle,
                idle_max_run_seconds=idle, idle_whole_hour=idle > 0, energy_joules=3.6e5))
        for dev in devices:
            health.append(DeviceHealthHour(cluster=cluster, device=dev, hour_start=at(d, hour),
                                           temperature_c_avg=60, temperature_c_max=70, power_watts_avg=300,
                                           energy_joules=1.08e6))
    UsageHour.objects.bulk_create(rows)
    DeviceHealthHour.objects.bulk_create(health)

    # Quota history over the advice window for both namespaces: one advice row each.
    quota = []
    for back in range(1, 24 * 10):
        hour = (now - timedelta(hours=back)).replace(minute=0, second=0, microsecond=0)
        for ns in (n.ns_a, n.ns_b):
            quota.append(QuotaHour(cluster=cluster, namespace=ns, resource="requests.nvidia.com/gpu",
                                   hour_start=hour, hard=8, used_max=1, seconds_at_hard=0))
    QuotaHour.objects.bulk_create(quota)
    for ns in (n.ns_a, n.ns_b):
        RecommendationSnapshot.objects.create(
            cluster=cluster, kind="namespace", name=ns, resource="requests.nvidia.com/gpu", day=d - timedelta(days=1),
            window_days=28, history_hours=200, hard=8, p50=1, p90=1, p95=1, target=2, lower_bound=1, upper_bound=3,
            verdict="shrink", reason="mostly unused", monthly_money_at_stake=Decimal("1234.00"), currency=CURRENCY)

    rate = Rate.objects.create(gpu_model=H100, mig_profile="", price_class="on_demand",
                               hourly_rate=Decimal("3.000000"), currency=CURRENCY, effective_from=date(2020, 1, 1))

    for team, ns, pod in ((n.team_a, n.ns_a, n.pod_a), (n.team_b, n.ns_b, n.pod_b)):
        Alert.objects.create(key=f"idle:{cluster.pk}:{ns}/{pod}:1", kind="idle", team=team, cluster=cluster,
                             namespace=ns, pod=pod, episode_start=at(d, 8), episode_end=at(d, 13),
                             text=f"{ns}/{pod} of {team} idle for 5 hours", fields={"team": team, "pod": pod})
        Alert.objects.create(key=f"budget:{team}:{period_of(d)}:80", kind="budget", team=team,
                             text=f"{team} used 80% of its budget ({CURRENCY} 800 of 1000)",
                             fields={"team": team, "unit": "money", "currency": CURRENCY, "spent": "800"})

    # The cluster was backfilled from January 2025 (a run that found no GPU busy or idle): the
    # fleet's history begins there, so the months up to D can be closed (docs/chargeback.md).
    backfill = IngestRun.objects.create(cluster=cluster, window_start=datetime(2025, 1, 1, tzinfo=dt_timezone.utc),
                                        window_end=at(d, 0), status="succeeded", rows_written=0,
                                        finished_at=datetime(2025, 1, 2, tzinfo=dt_timezone.utc), duration_seconds=1.0)
    IngestRun.objects.filter(pk=backfill.pk).update(started_at=datetime(2025, 1, 2, tzinfo=dt_timezone.utc))
    IngestRun.objects.create(cluster=cluster, window_start=at(d, 0), window_end=at(d, 23), status="succeeded",
                             rows_written=len(rows), finished_at=now, duration_seconds=1.0)
    open_period = period_of(d)
    closed_period = prev_period(prev_period(open_period))
    do_close_period(closed_period, actor=users["finance"])
    # A rate card uploaded from the browser and refused (its page: /admin-tools/rates/imports/<pk>/).
    rate_import = RateImport.objects.create(file_name=f"{n.team_a}.csv", status=RateImport.Status.REFUSED,
                                            lines_total=1, errors=[f"line 2: gpu_model {n.team_b!r} is not known"])
    return Seeded(names=n, users=users, tokens=tokens, cluster=cluster, rate=rate, day=d,
                  open_period=open_period, closed_period=closed_period, extra={"rate_import": rate_import.pk})
