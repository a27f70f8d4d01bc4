"""The daily rollup equals the hourly one after overlapping ingests, and readers agree on both."""
from collections import defaultdict
from datetime import datetime, timedelta, timezone

import pytest
from django.core.management import call_command
from django.db.models import Count, F, Sum
from django.db.models.functions import TruncDate

from apps.accounting.models import UsageDay, UsageDayBuilt, UsageHour
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.usage.cells import UsageFilter, usage_cells
from apps.ingest.pipeline import ingest
from apps.simulator.builders import build_scenario
from apps.simulator.demo import SimulatorFetcher
from tests.support.factories import make_cluster

pytestmark = pytest.mark.django_db
H = timedelta(hours=1)
# 2026-10-05 00:00 UTC; in Kolkata (UTC+5:30) billing days start at 18:30 UTC, off the hour grid.
START = int(datetime(2026, 10, 5, tzinfo=timezone.utc).timestamp())


def utc(ts):
    return datetime.fromtimestamp(ts, tz=timezone.utc)


@pytest.fixture(scope="module")
def scenario():
    return build_scenario(name="daily", start=START, hours=40, interval_seconds=300, seed=7)


@pytest.fixture
def fetcher(scenario):
    return SimulatorFetcher(scenario)


@pytest.fixture
def cluster():
    return make_cluster("lab", prometheus_url="http://127.0.0.1:9")


def daily_from_hourly():
    """What the daily table must hold: the hourly rows summed per billing day, recomputed here."""
    rows = (UsageHour.objects.values("cluster_id", "namespace", "gpu_model", "mig_profile", "node",
                                     d=TruncDate("hour_start", tzinfo=billing_zone()))
            .annotate(g=Sum("gpu_seconds"), u=Sum("used_gpu_seconds"), i=Sum("idle_gpu_seconds"),
                      m=Sum("mig_seconds"), e=Sum("energy_joules"), s=Sum("sample_count"), n=Count("id"))
            .order_by())
    return {(r["cluster_id"], r["d"], r["namespace"], r["gpu_model"], r["mig_profile"], r["node"]):
            (round(r["g"], 6), round(r["u"], 6), round(r["i"], 6), round(r["m"], 6), round(r["e"] or 0.0, 3),
             r["s"], r["n"]) for r in rows}


def assert_same_days(actual, expected):
    """Equal keys, counts exactly, sums to 1e-9 relative (Postgres and Python add in other orders)."""
    assert set(actual) == set(expected)
    for key, values in expected.items():
        assert actual[key] == pytest.approx(values, rel=1e-9, abs=1.5e-3), key  # both sides rounded to 3 dp


def daily_table():
    return {(r.cluster_id, r.day, r.namespace, r.gpu_model, r.mig_profile, r.node):
            (round(r.gpu_seconds, 6), round(r.used_gpu_seconds, 6), round(r.idle_gpu_seconds, 6),
             round(r.mig_seconds, 6), round(r.energy_joules, 3), r.sample_count, r.hour_rows)
            for r in UsageDay.objects.all()}


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/New_York"])
def test_daily_equals_hourly_after_overlapping_ingests(settings, cluster, fetcher, zone):
    settings.BILLING_TIMEZONE = zone
    settings.INGEST_CHUNK_HOURS = 5
    ingest(cluster, utc(START), utc(START + 30 * 3600), fetcher=fetcher)
    ingest(cluster, utc(START + 10 * 3600), utc(START + 40 * 3600), fetcher=fetcher)   # overlaps 20 h
    ingest(cluster, utc(START + 17 * 3600 + 1200), utc(START + 19 * 3600), fetcher=fetcher)  # mid-hour, on a boundary
    expected = daily_from_hourly()
    assert len(expected) > 20
    assert_same_days(daily_table(), expected)
    # every day holding an hour is marked built in this zone
    days = {k[1] for k in expected}
    assert set(UsageDayBuilt.objects.filter(zone=zone).values_list("day", flat=True)) == days


def test_rebuild_command_restores_the_daily_table_and_follows_the_zone(settings, cluster, fetcher):
    settings.BILLING_TIMEZONE = "UTC"
    ingest(cluster, utc(START), utc(START + 40 * 3600), fetcher=fetcher)
    UsageDay.objects.all().delete()
    call_command("rebuild_rollups", "--cluster", "lab")
    assert_same_days(daily_table(), daily_from_hourly())
    settings.BILLING_TIMEZONE = "Asia/Kolkata"
    call_command("rebuild_rollups", "--start", "2026-10-04", "--end", "2026-10-08")
    assert_same_days(daily_table(), daily_from_hourly())
    assert set(UsageDayBuilt.objects.values_list("zone", flat=True)) == {"Asia/Kolkata"}


def _cell_key(c):
    return (c.cluster_id, c.namespace, c.team, c.gpu_model, c.mig_profile, c.price_class, c.day)


def _cells(f):
    out = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for c in usage_cells(f):
        acc = out[_cell_key(c)]
        for i, v in enumerate((c.gpu_seconds, c.used_gpu_seconds, c.idle_gpu_seconds, c.mig_seconds)):
            acc[i] += v
    return {k: tuple(round(x, 6) for x in v) for k, v in out.items()}


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
def test_usage_cells_agree_on_daily_and_hourly_tables(settings, cluster, fetcher, zone, django_assert_max_num_queries):
    settings.BILLING_TIMEZONE = zone
    ingest(cluster, utc(START), utc(START + 40 * 3600), fetcher=fetcher)
    tz = billing_zone()
    day0 = utc(START).astimezone(tz).date() + timedelta(days=1)
    start = datetime.combine(day0, datetime.min.time(), tzinfo=tz)  # one whole billing day
    f = UsageFilter(start=start, end=start + timedelta(days=1))
    from_days = _cells(f)
    assert from_days
    UsageDayBuilt.objects.all().delete()        # no day marked built: the hourly table answers
    from_hours = _cells(f)
    assert from_days == from_hours
    # a window on instants, not midnights, is answered from the hours even when days are built
    call_command("rebuild_rollups")
    g = UsageFilter(start=start + 3 * H, end=start + 7 * H, cluster="lab")
    total = sum(v[0] for v in _cells(g).values())
    hourly = UsageHour.objects.filter(hour_start__gte=g.start, hour_start__lt=g.end).aggregate(s=Sum("gpu_seconds"))
    assert total == pytest.approx(hourly["s"])


def test_hand_written_hours_without_a_built_marker_are_read_hourly(settings, cluster):
    """Rows written outside ingest (tests, imports) are never hidden behind a stale daily table."""
    from apps.clusters.models import Device

    settings.BILLING_TIMEZONE = "UTC"
    t0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
    dev = Device.objects.create(cluster=cluster, uuid="GPU-1", host="n1", model_name="H100", gpu_fraction=1.0,
                                first_seen=t0, last_seen=t0)
    t0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
    UsageHour.objects.bulk_create([
        UsageHour(cluster=cluster, device=dev, namespace="ml", pod="p", hour_start=t0 + i * H, node="n1",
                  gpu_model="H100", gpu_fraction=1.0, sample_count=60, gpu_seconds=3600.0,
                  used_gpu_seconds=1800.0, idle_gpu_seconds=0.0) for i in range(24)
    ])
    cells = usage_cells(UsageFilter(start=t0, end=t0 + timedelta(days=1)))
    assert sum(c.gpu_seconds for c in cells) == pytest.approx(24 * 3600.0)
    assert not UsageDay.objects.exists()


@pytest.mark.parametrize("pattern", ["spot-*", "gpu-node-0?", "*[0-3]", "a.b*", "node[!2]*", "x+y*", "*", "[ab]*c"])
def test_node_pool_globs_match_in_sql_as_in_python(cluster, pattern):
    import re
    from fnmatch import fnmatchcase

    from apps.accounting.usage.price_classes import glob_regex

    for node in ("spot-1", "gpu-node-01", "gpu-node-1", "n3", "n7", "a.bc", "axbc", "node2x", "node3x", "x+yz",
                 "xxyz", "", "ac", "bbc", "[ab]c"):
        assert bool(re.match(glob_regex(pattern), node)) == fnmatchcase(node, pattern), (pattern, node)


def _per_day_from_hours(f, zone):
    """(namespace, billing day) → GPU-seconds, straight from UsageHour: the expected answer."""
    rows = (UsageHour.objects.filter(hour_start__gte=f.start, hour_start__lt=f.end)
            .values("namespace", d=TruncDate("hour_start", tzinfo=zone)).annotate(g=Sum("gpu_seconds")).order_by())
    return {(r["namespace"], r["d"]): round(r["g"], 6) for r in rows}


def _per_day_from_cells(f):
    out = defaultdict(float)
    for c in usage_cells(f):
        out[(c.namespace, c.day)] += c.gpu_seconds
    return {k: round(v, 6) for k, v in out.items()}


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/New_York"])
def test_a_window_off_midnight_reads_whole_days_daily_and_the_rest_hourly(settings, cluster, zone):
    """5 h after the first UTC midnight to 6 h before the end of a 100-hour history: the partial
    days at both ends and a day whose roll-up is missing come from the hours; the other whole
    days from UsageDay, which is doubled here to show it is the one read."""
    settings.BILLING_TIMEZONE = zone
    scenario = build_scenario(name="mixed", start=START, hours=100, interval_seconds=900, seed=3)
    ingest(cluster, utc(START), utc(START + 100 * 3600), fetcher=SimulatorFetcher(scenario))
    tz = billing_zone()
    f = UsageFilter(start=utc(START + 5 * 3600), end=utc(START + 94 * 3600))
    expected = _per_day_from_hours(f, tz)
    whole = sorted({d for _, d in expected if f.start <= datetime.combine(d, datetime.min.time(), tzinfo=tz)
                    and datetime.combine(d + timedelta(days=1), datetime.min.time(), tzinfo=tz) <= f.end})
    assert len(whole) >= 2 and len({d for _, d in expected}) == len(whole) + 2    # and two partial days
    assert _per_day_from_cells(f) == expected

    missing, doubled = whole[0], whole[-1]
    UsageDayBuilt.objects.filter(day=missing).delete()                   # this day is read hourly again
    UsageDay.objects.filter(day__in=[missing, doubled]).update(gpu_seconds=2 * F("gpu_seconds"))
    got = _per_day_from_cells(f)
    assert got == pytest.approx({k: 2 * v if k[1] == doubled else v for k, v in expected.items()}, abs=1e-3)
    assert got != pytest.approx(expected, abs=1e-3)
