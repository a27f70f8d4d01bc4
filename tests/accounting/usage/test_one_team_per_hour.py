"""One team-per-hour rule for every reader of the rollups (apps/accounting/usage/reader/,
docs/teams-and-relabels.md, "Which team owns an hour"): a re-org moves namespace `ml` from team
A to team B at 12:00, and the idle list, the explorer, the idle alerts, fleet health's energy
and the team page's quota all give the hours before the move to A and the hours after to B; a
lead of B never sees A's hours.

The day (billing zone UTC), 2 March 2026: pod `train` of `ml` holds one H100 from 08:00 to
16:00, idle the whole time (0 % used), drawing 1 kWh an hour, its namespace at its GPU quota
for half of each hour. A's hours are 08–11 (4 h), B's 12–15 (4 h).
"""
from datetime import timedelta

import pytest

from apps.accounting.models import QuotaHour, UsageHour
from apps.recommendations import alerts
from apps.recommendations.models import Alert
from apps.reports.data.explore import ExploreOptions, explore
from apps.reports.data.health import energy_by_team_month
from apps.reports.data.idle import EVERY_IDLE_POD, IdleOptions, idle_pods
from apps.reports.data.team import quota_use
from apps.accounting.query.filters import ReportFilter
from tests.support.factories import label_namespace, make_cluster, make_device, make_namespace, make_usage, utc

pytestmark = pytest.mark.django_db

MOVE = utc(2026, 3, 2, 12)
HOUR = 3600.0


def sel(teams=None):
    return ReportFilter(start=utc(2026, 3, 2), end=utc(2026, 3, 3), cluster=None, team=None,
                     scope=frozenset(teams) if teams else None, fleet=teams is None, money=False, admin=False,
                     query={})


@pytest.fixture
def reorg(settings):
    settings.BILLING_TIMEZONE = "UTC"
    prod = make_cluster()
    ml = make_namespace(prod, "ml", label_team="A")
    label_namespace(ml, "B", since=MOVE)
    g1 = make_device(prod, host="n1")
    make_usage(g1, "ml", utc(2026, 3, 2, 8), hours=8, pod="train", used_ratio=0.0)
    UsageHour.objects.update(idle_gpu_seconds=HOUR, idle_prefix_seconds=HOUR, idle_suffix_seconds=HOUR,
                             idle_max_run_seconds=HOUR, idle_whole_hour=True, energy_joules=3.6e6)
    for i in range(8):
        QuotaHour.objects.create(cluster=prod, namespace="ml", resource="requests.nvidia.com/gpu",
                                 hour_start=utc(2026, 3, 2, 8) + timedelta(hours=i), hard=1.0, used_max=1.0,
                                 seconds_at_hard=1800.0)
    return prod


def test_the_idle_list_gives_each_team_its_own_hours(reorg):
    pods = idle_pods(sel(), IdleOptions(*EVERY_IDLE_POD))
    assert [(p.pod, p.team, p.idle_gpu_seconds / HOUR, p.longest_idle_seconds / HOUR, p.first_hour.hour,
             p.last_hour.hour) for p in sorted(pods, key=lambda p: p.team)] == [
        ("train", "A", 4.0, 4.0, 8, 11),
        ("train", "B", 4.0, 4.0, 12, 15),
    ]


def test_a_lead_of_b_sees_only_bs_hours(reorg):
    pods = idle_pods(sel({"B"}), IdleOptions(*EVERY_IDLE_POD))
    assert [(p.team, p.allocated_gpu_seconds / HOUR, p.idle_gpu_seconds / HOUR) for p in pods] == [("B", 4.0, 4.0)]
    rows = explore(sel({"B"}), ExploreOptions(grain="day")).rows
    assert [(r.team, r.allocated_gpu_seconds / HOUR) for r in rows] == [("B", 4.0)]
    assert [(e["team"], e["energy_kwh"]) for e in energy_by_team_month(sel({"B"}))] == [("B", 4.0)]


def test_the_explorer_splits_the_day_and_the_hours_at_the_move(reorg):
    by_day = explore(sel(), ExploreOptions(grain="day")).rows
    assert sorted((r.team, r.allocated_gpu_seconds / HOUR) for r in by_day) == [("A", 4.0), ("B", 4.0)]
    by_hour = explore(sel(), ExploreOptions(grain="hour")).rows
    assert [(r.period_start.hour, r.team) for r in by_hour] == [(h, "A" if h < 12 else "B") for h in range(8, 16)]


def test_an_idle_alert_per_team(reorg, settings):
    settings.ALERT_EMAIL_TO, settings.ALERT_WEBHOOK_URL = [], ""
    raised = alerts.check_idle(utc(2026, 3, 2, 16), lookback_hours=24, min_minutes=30)
    assert sorted((r.alert.team, r.alert.episode_start.hour, r.alert.episode_end.hour) for r in raised) == [
        ("A", 8, 12), ("B", 12, 16)]
    # run again: the same two episodes, nothing new, neither widened into the other
    assert alerts.check_idle(utc(2026, 3, 2, 16), lookback_hours=24, min_minutes=30) == []
    assert sorted((a.team, a.episode_start.hour, a.episode_end.hour) for a in Alert.objects.all()) == [
        ("A", 8, 12), ("B", 12, 16)]


def test_fleet_energy_and_quota_by_the_hour(reorg):
    assert sorted((e["team"], e["energy_kwh"]) for e in energy_by_team_month(sel())) == [("A", 4.0), ("B", 4.0)]
    # half of each hour at the quota: 4 × 0.5 h each
    assert [(q.namespace, q.hours_at_hard) for q in quota_use(sel(), "A")] == [("ml", 2.0)]
    assert [(q.namespace, q.hours_at_hard) for q in quota_use(sel(), "B")] == [("ml", 2.0)]
