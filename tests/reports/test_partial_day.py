"""Today's partial day on the daily charts (#26): scaled to a whole day at the pace it ran,
shaded, and labelled with its hours — and the last point always has its axis label.

Before: today's 20 hours were plotted as a whole day, so every overview and team chart ended
in a cliff (capacity 320 GPU-hours against 384 the day before), and past 14 days plotly's own
ticks left the last point unlabelled.
"""
import json
import re
from datetime import date, datetime, timedelta, timezone

from django.utils import timezone as dj_timezone

from apps.accounting.models import UsageHour
from apps.accounting.usage.cells import UsageFilter
from apps.clusters.models import Cluster
from apps.reports import charts
from apps.reports.data.overview import DayTotals, PartialDay, partial_day

from tests.support.page_seed import H100
from tests.support.factories import make_cluster

UTC = timezone.utc


def spec_of(fragment):
    return json.loads(re.search(r'<script type="application/json"[^>]*>(.*?)</script>', fragment, re.S).group(1))


def test_the_partial_day_is_where_the_data_stops(db):
    make_cluster("a", prometheus_url="http://127.0.0.1:9/",
                           ingested_until=datetime(2026, 11, 26, 20, tzinfo=UTC))
    week = UsageFilter(start=datetime(2026, 11, 20, tzinfo=UTC), end=datetime(2026, 11, 27, tzinfo=UTC))
    assert partial_day(week, now=datetime(2026, 11, 26, 21, 30, tzinfo=UTC)) == PartialDay(date(2026, 11, 26), 20, 24)
    # data up to now when ingest ran ahead of the clock; none when the window ends before the data
    assert partial_day(week, now=datetime(2026, 11, 26, 6, tzinfo=UTC)) == PartialDay(date(2026, 11, 26), 6, 24)
    closed = UsageFilter(start=datetime(2026, 11, 1, tzinfo=UTC), end=datetime(2026, 11, 26, tzinfo=UTC))
    assert partial_day(closed, now=datetime(2026, 11, 26, 21, tzinfo=UTC)) is None


def test_the_fleet_chart_scales_and_marks_the_partial_day():
    # 16 GPUs: 384 GPU-hours a whole day; today 20 hours of data = 320 (all unallocated here)
    days = [DayTotals(date(2026, 11, 25), unallocated_gpu_seconds=384 * 3600.0),
            DayTotals(date(2026, 11, 26), unallocated_gpu_seconds=320 * 3600.0)]
    spec = spec_of(charts.fleet_area(days, True, PartialDay(date(2026, 11, 26), 20, 24)))
    unallocated = next(t for t in spec["data"] if t["name"] == "unallocated")
    assert unallocated["y"] == [384.0, 384.0]                      # 320 × 24 / 20
    axis = spec["layout"]["xaxis"]
    assert axis["ticktext"] == ["Nov 25", "Nov 26 (20 h)"]
    [shade] = spec["layout"]["shapes"]
    assert (shade["x0"], shade["x1"]) == ("2026-11-25T12:00:00", "2026-11-26T12:00:00")
    assert spec["layout"]["annotations"][0]["text"] == "20 of 24 h, at that pace"


def test_the_last_day_of_a_long_window_has_its_label():
    days = [DayTotals(date(2026, 10, 1) + timedelta(days=i), allocated_gpu_seconds=3600.0) for i in range(31)]
    axis = spec_of(charts.fleet_area(days, False))["layout"]["xaxis"]
    assert axis["ticktext"][-1] == "Oct 31" and len(axis["ticktext"]) <= 14
    assert axis["tickvals"][-1].startswith("2026-10-31")


def test_the_overview_and_team_charts_mark_today(login):
    now = dj_timezone.now().astimezone(UTC)
    top = now.replace(minute=0, second=0, microsecond=0)
    midnight = top.replace(hour=0)
    if top == midnight:
        top = midnight + timedelta(hours=1)   # 00:xx: ingest "ran ahead" to 01:00, the data stops at now
    alpha = Cluster.objects.get(name="alpha")
    alpha.ingested_until = top
    alpha.save()
    gpu = alpha.devices.get(uuid="GPU-0")
    hour = midnight
    while hour < top:
        UsageHour.objects.create(cluster=alpha, device=gpu, namespace="cv-train", pod="train-1", hour_start=hour,
                                 node="node-a", gpu_model=H100, gpu_fraction=1.0, sample_count=120, gpu_seconds=3600,
                                 used_gpu_seconds=1800)
        hour += timedelta(hours=1)
    client = login("admin")
    for path, chart in (("/", "fleet"), ("/teams/vision/", "namespaces")):
        body = client.get(path).content.decode()
        fragment = body[body.index(f'data-chart="{chart}"'):]
        spec = spec_of(fragment)
        label = spec["layout"]["xaxis"]["ticktext"][-1]
        assert label.startswith(f"{now:%b %d} (") and label.endswith(" h)"), (path, label)
        assert spec["layout"]["shapes"], path
