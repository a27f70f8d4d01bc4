"""The per-pod day summary (UsagePodDay, apps/accounting/usage/daily.py) and the idle list read
from it (docs/performance.md, "The longest reads"): whole days come from the summary, the rest
of the window from the hours, and the list is the one the hours alone give.

Billing zone Europe/Berlin (UTC+1 in March), so the billing days are cut at 23:00 UTC.
"""
import io
import random
from datetime import date, timedelta

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from apps.accounting.core.measures import (block_longest_idle_seconds, fold_idle_blocks, idle_block,
                                           longest_idle_seconds)
from apps.accounting.models import UsageHour, UsagePodDay, UsagePodDayBuilt
from apps.accounting.query.filters import ReportFilter
from apps.accounting.usage.daily import rebuild_days
from apps.reports.data import idle as idle_data
from apps.reports.data.idle import EVERY_IDLE_POD, IdleOptions, idle_pods
from tests.support.factories import label_namespace, make_cluster, make_device, make_namespace, usage_row, utc

pytestmark = pytest.mark.django_db

HOUR = 3600.0
ZONE = "Europe/Berlin"


def sel(start, end, teams=None):
    return ReportFilter(start=start, end=end, cluster=None, team=None,
                        scope=frozenset(teams) if teams else None, fleet=teams is None, money=False, admin=False,
                        query={})


def hour(device, ns, pod, start, *, used=0.0, idle=0.0, prefix=0.0, suffix=0.0, max_run=0.0, whole=False,
         gpu=HOUR):
    return usage_row(device, ns, start, pod=pod, gpu_seconds=gpu, used_gpu_seconds=used, idle_gpu_seconds=idle,
                     idle_prefix_seconds=prefix, idle_suffix_seconds=suffix, idle_max_run_seconds=max(max_run, prefix, suffix),
                     idle_whole_hour=whole)


def listed(pods):
    return [(p.cluster, p.namespace, p.pod, p.team, p.nodes, p.gpus_held, p.allocated_gpu_seconds,
             p.used_gpu_seconds, p.idle_gpu_seconds, p.longest_idle_seconds, p.first_hour, p.last_hour)
            for p in sorted(pods, key=idle_data.pod_order)]


def both(window, opts=EVERY_IDLE_POD, teams=None):
    """(the list read with the summary, the list read from every hour)."""
    fast = idle_pods(sel(*window, teams), IdleOptions(*opts))
    idle_data.SUMMARY = False
    try:
        slow = idle_pods(sel(*window, teams), IdleOptions(*opts))
    finally:
        idle_data.SUMMARY = True
    return fast, slow


def test_a_pod_idle_across_midnight_joins_its_stretch_in_the_summary(settings):
    """Pod `train` holds one GPU 21:00–01:00 local (20:00–24:00 UTC on 2 March). It is idle from
    23:30 to 00:45 local: the 22:00 UTC hour's last 30 minutes and the 23:00 UTC hour's first
    45 (a new billing day). Its other idle: 10 minutes inside the 20:00 UTC hour."""
    settings.BILLING_TIMEZONE = ZONE
    prod = make_cluster()
    make_namespace(prod, "ml", label_team="A")
    g = make_device(prod, host="n1")
    UsageHour.objects.bulk_create([
        hour(g, "ml", "train", utc(2026, 3, 2, 20), used=3000.0, idle=600.0, max_run=600.0),
        hour(g, "ml", "train", utc(2026, 3, 2, 21), used=3600.0),
        hour(g, "ml", "train", utc(2026, 3, 2, 22), used=1800.0, idle=1800.0, suffix=1800.0),
        hour(g, "ml", "train", utc(2026, 3, 2, 23), used=900.0, idle=2700.0, prefix=2700.0),
    ])
    rebuild_days(prod.pk, [date(2026, 3, 2), date(2026, 3, 3)])
    rows = {r.day: r for r in UsagePodDay.objects.all()}
    first, second = rows[date(2026, 3, 2)], rows[date(2026, 3, 3)]
    # 2 March (local): 20:00–22:00 UTC, three hours; its open stretch at the end is 30 minutes
    assert (first.gpu_seconds, first.used_gpu_seconds, first.idle_gpu_seconds) == (3 * HOUR, 8400.0, 2400.0)
    assert (first.first_hour, first.last_hour, first.last_fraction) == (utc(2026, 3, 2, 20), utc(2026, 3, 2, 22), 1.0)
    assert (first.idle_head_seconds, first.idle_tail_seconds, first.idle_inner_seconds, first.idle_whole) == (
        0.0, 1800.0, 600.0, False)
    # 3 March: the 23:00 UTC hour alone, its first 45 minutes idle
    assert (second.idle_head_seconds, second.idle_tail_seconds, second.idle_whole) == (2700.0, 0.0, False)
    assert set(UsagePodDayBuilt.objects.values_list("day", "zone")) == {(date(2026, 3, 2), ZONE),
                                                                         (date(2026, 3, 3), ZONE)}
    # the two days (local), both whole and read from the summary: 23:30–00:45 is one stretch
    window = (utc(2026, 3, 1, 23), utc(2026, 3, 3, 23))
    fast, slow = both(window)
    assert [(p.pod, p.idle_gpu_seconds, p.longest_idle_seconds, p.gpus_held, p.nodes) for p in fast] == [
        ("train", 5100.0, 4500.0, 1.0, ["n1"])]
    assert listed(fast) == listed(slow)
    # listed at 75 minutes, not at 76
    assert len(idle_pods(sel(*window), IdleOptions(1.0, 75.0))) == 1
    assert idle_pods(sel(*window), IdleOptions(1.0, 76.0)) == []


def test_a_window_cut_inside_a_day_reads_that_days_hours(settings):
    """The same stretch with the window starting at 22:00 UTC: 2 March is not whole, so its
    hour is read from the hours and joined to 3 March's summary block."""
    settings.BILLING_TIMEZONE = ZONE
    prod = make_cluster()
    make_namespace(prod, "ml", label_team="A")
    g = make_device(prod, host="n1")
    UsageHour.objects.bulk_create([
        hour(g, "ml", "train", utc(2026, 3, 2, 22), used=1800.0, idle=1800.0, suffix=1800.0),
        hour(g, "ml", "train", utc(2026, 3, 2, 23), used=900.0, idle=2700.0, prefix=2700.0),
        hour(g, "ml", "train", utc(2026, 3, 3, 0), used=0.0, idle=3600.0, prefix=3600.0, whole=True),
    ])
    rebuild_days(prod.pk, [date(2026, 3, 2), date(2026, 3, 3)])
    fast, slow = both((utc(2026, 3, 2, 22), utc(2026, 3, 3, 23)))
    assert [(p.idle_gpu_seconds, p.longest_idle_seconds) for p in fast] == [(8100.0, 4500.0)]
    assert listed(fast) == listed(slow)


def test_a_day_not_built_is_read_from_the_hours(settings):
    settings.BILLING_TIMEZONE = ZONE
    prod = make_cluster()
    make_namespace(prod, "ml", label_team="A")
    g = make_device(prod, host="n1")
    UsageHour.objects.bulk_create([hour(g, "ml", "train", utc(2026, 3, 2, 12), idle=HOUR, prefix=HOUR, whole=True)])
    rebuild_days(prod.pk, [date(2026, 3, 2)])
    hour(g, "ml", "train", utc(2026, 3, 2, 13), idle=HOUR, prefix=HOUR, whole=True).save(force_insert=True)
    UsagePodDayBuilt.objects.all().delete()         # written by hand after the rebuild: not built
    fast, slow = both((utc(2026, 3, 1, 23), utc(2026, 3, 2, 23)))
    assert [p.longest_idle_seconds for p in fast] == [2 * HOUR]
    assert listed(fast) == listed(slow)


# ---- the summary gives the hours' list, for random histories ---------------------------------

def _history(seed: int):
    """Three days of two clusters' GPUs held by pods in runs, with random idle parts; one
    namespace relabelled to another team at a random instant, sometimes inside a day."""
    rng = random.Random(seed)
    prod, dev = make_cluster("prod"), make_cluster("dev")
    ns = {c: [make_namespace(c, name, label_team=team) for name, team in (("ml", "A"), ("web", "B"))]
          for c in (prod, dev)}
    move = utc(2026, 3, 2) + timedelta(minutes=rng.choice([0, 30, 23 * 60, 13 * 60 + 20]))
    if rng.random() < 0.5:
        label_namespace(ns[prod][0], "B", since=move)
    devices = [make_device(c, host=f"{c.name}-n{i % 2}", fraction=rng.choice([1.0, 1.0, 0.5]))
               for c in (prod, dev) for i in range(3)]
    rows = []
    start = utc(2026, 3, 1, 23)
    for d in devices:
        t = start + timedelta(hours=rng.randrange(0, 6))
        while t < start + timedelta(days=3):
            span = rng.randrange(1, 30)
            namespace = rng.choice(ns[d.cluster])
            pod = f"p{rng.randrange(3)}"
            for i in range(span):
                if rng.random() < 0.1:
                    continue                             # an hour with no samples: a gap
                kind = rng.random()
                h = t + timedelta(hours=i)
                gpu = HOUR * d.gpu_fraction
                if kind < 0.35:
                    rows.append(hour(d, namespace.name, pod, h, idle=gpu, prefix=HOUR, whole=True, gpu=gpu))
                elif kind < 0.8:
                    p, s, m = (float(rng.choice([0, 0, 60, 600, 1800])), float(rng.choice([0, 0, 120, 900, 2400])),
                               float(rng.choice([0, 300, 1200])))
                    rows.append(hour(d, namespace.name, pod, h, used=gpu / 4, idle=(p + s) * d.gpu_fraction,
                                     prefix=p, suffix=s, max_run=m, gpu=gpu))
                else:
                    rows.append(hour(d, namespace.name, pod, h, used=gpu, gpu=gpu))
            t += timedelta(hours=span + rng.randrange(0, 4))
    UsageHour.objects.bulk_create(rows)
    for c in (prod, dev):
        rebuild_days(c.pk, [date(2026, 3, 1) + timedelta(days=i) for i in range(5)])
    return rng


@pytest.mark.parametrize("seed", range(6))
def test_the_summary_gives_the_hours_list(settings, seed):
    settings.BILLING_TIMEZONE = ZONE
    rng = _history(seed)
    windows = [(utc(2026, 2, 28, 23), utc(2026, 3, 4, 23)),                 # every day whole
               (utc(2026, 3, 1, 23) + timedelta(hours=rng.randrange(1, 20)),  # edges inside days
                utc(2026, 3, 3, 23) + timedelta(hours=rng.randrange(1, 20))),
               (utc(2026, 3, 2, 23), utc(2026, 3, 3, 23))]
    for window in windows:
        for opts in (EVERY_IDLE_POD, (0.5, 30.0)):
            for teams in (None, {"B"}):
                fast, slow = both(window, opts, teams)
                assert listed(fast) == listed(slow)
                if opts == EVERY_IDLE_POD and teams is None:
                    assert fast                           # the list is not empty: something is compared
    assert UsagePodDay.objects.exists()


hours_st = st.lists(st.tuples(st.sampled_from([1, 1, 1, 2]), st.booleans(),
                              st.sampled_from([0.0, 60.0, 1800.0]), st.sampled_from([0.0, 120.0, 900.0]),
                              st.sampled_from([0.0, 300.0])), max_size=60)


@hsettings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(hours_st, st.lists(st.integers(0, 60), max_size=6))
def test_blocks_joined_give_the_longest_stretch_of_their_hours(steps, cuts):
    """Any cutting of a device-pod's hours into blocks (days, edges) gives `longest_idle_seconds`."""
    hours, t = [], 0
    for step, whole, prefix, suffix, inner in steps:
        t += step * 3600
        hours.append((t, 3600.0, 0.0, 3600.0, True) if whole else (t, prefix, suffix, max(prefix, suffix, inner), False))
    edges = sorted({0, len(hours), *(c for c in cuts if c <= len(hours))})
    blocks = [fold_idle_blocks(idle_block(h) for h in hours[a:b]) for a, b in zip(edges, edges[1:]) if b > a]
    assert block_longest_idle_seconds(fold_idle_blocks(blocks)) == longest_idle_seconds(hours)


def test_rebuild_rollups_back_fills_the_summary_of_hours_already_stored(settings):
    """Hours stored before migration 0018 have no summary: the idle list reads them from the
    hours until `manage.py rebuild_rollups` builds it (docs/performance.md)."""
    from django.core.management import call_command

    settings.BILLING_TIMEZONE = ZONE
    prod = make_cluster()
    make_namespace(prod, "ml", label_team="A")
    g = make_device(prod, host="n1")
    UsageHour.objects.bulk_create([hour(g, "ml", "train", utc(2026, 3, 2, h), idle=HOUR, prefix=HOUR, whole=True)
                                   for h in (21, 22, 23)])
    window = (utc(2026, 3, 1, 23), utc(2026, 3, 3, 23))
    before = listed(idle_pods(sel(*window), IdleOptions(*EVERY_IDLE_POD)))
    assert not UsagePodDay.objects.exists()
    call_command("rebuild_rollups", stdout=io.StringIO())
    assert sorted(UsagePodDay.objects.values_list("day", "idle_head_seconds", "idle_whole")) == [
        (date(2026, 3, 2), 2 * HOUR, True), (date(2026, 3, 3), HOUR, True)]
    assert listed(idle_pods(sel(*window), IdleOptions(*EVERY_IDLE_POD))) == before
    assert [p.longest_idle_seconds for p in idle_pods(sel(*window), IdleOptions(*EVERY_IDLE_POD))] == [3 * HOUR]
