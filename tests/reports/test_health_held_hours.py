"""A team's fleet health covers exactly the device-hours its namespaces held, read without a
subquery per reading (apps/reports/data/health.py, docs/performance.md): a namespace that was
theirs all along, one that changed hands mid-window, and a GPU time-sliced with another team."""

import pytest

from apps.accounting.models import DeviceHealthHour
from apps.reports.data.health import device_health, held_hours, hourly_health
from apps.accounting.query.filters import ReportFilter
from tests.support.factories import label_namespace, make_cluster, make_device, make_namespace, make_usage, utc

pytestmark = pytest.mark.django_db


def reading(device, hour, temp, power, xid=0):
    DeviceHealthHour.objects.create(cluster=device.cluster, device=device, hour_start=utc(2026, 3, 2, hour),
                                    temperature_c_avg=temp, temperature_c_max=temp + 5, power_watts_avg=power,
                                    energy_joules=power * 3600.0, xid_samples=xid, xid_codes=[79] if xid else [])


def sel(teams):
    return ReportFilter(start=utc(2026, 3, 2), end=utc(2026, 3, 3), cluster=None, team=None,
                     scope=frozenset(teams) if teams else None, fleet=teams is None, money=False, admin=False, query={})


@pytest.fixture
def fleet(settings):
    settings.BILLING_TIMEZONE = "UTC"
    prod = make_cluster()
    make_namespace(prod, "ml", "A")                                  # A's all along
    cv = make_namespace(prod, "cv", label_team="A")                  # A's until 12:00, then B's
    label_namespace(cv, "B", since=utc(2026, 3, 2, 12))
    make_namespace(prod, "web", "B")
    g1, g2, g3 = make_device(prod, host="n1"), make_device(prod, host="n2"), make_device(prod, host="n3")
    make_usage(g1, "ml", utc(2026, 3, 2, 10), hours=2)               # 10, 11
    make_usage(g2, "cv", utc(2026, 3, 2, 11), hours=2)               # 11 (A), 12 (B)
    make_usage(g3, "web", utc(2026, 3, 2, 13), hours=1, pod="w")      # 13: B ...
    make_usage(g3, "ml", utc(2026, 3, 2, 13), hours=1, pod="shared")  # ... and A, time-sliced
    for device, hour, temp, power, xid in ((g1, 10, 60, 300, 0), (g1, 11, 70, 500, 1), (g1, 12, 90, 900, 1),
                                           (g2, 11, 50, 200, 0), (g2, 12, 80, 800, 0), (g3, 13, 65, 400, 0),
                                           (g3, 14, 99, 999, 1)):
        reading(device, hour, temp, power, xid)
    return g1, g2, g3


def test_team_a_sees_its_held_hours_only(fleet):
    g1, g2, g3 = fleet
    s = sel({"A"})
    held = held_hours(s)
    by_host = {d.host: d for d in device_health(s, held)}
    # g1 at 10 and 11 (not 12, nobody's); g2 at 11 only (cv was A's until 12:00); g3 at 13 (shared)
    assert sorted(by_host) == ["n1", "n2", "n3"]
    assert (by_host["n1"].temperature_c_avg, by_host["n1"].power_watts_avg, by_host["n1"].xid_samples,
            by_host["n1"].xid_codes) == (65.0, 400.0, 1, [79])
    assert by_host["n1"].energy_kwh == pytest.approx((300 + 500) * 3600 / 3.6e6)
    assert (by_host["n2"].temperature_c_max, by_host["n2"].power_watts_avg) == (55.0, 200.0)
    assert (by_host["n3"].temperature_c_avg, by_host["n3"].xid_samples) == (65.0, 0)
    hours = [(h.hour_start.hour, h.temperature_c_max, h.power_watts) for h in hourly_health(s, held)]
    assert hours == [(10, 65.0, 300.0), (11, 75.0, 700.0), (13, 70.0, 400.0)]


def test_team_b_and_the_fleet(fleet):
    s = sel({"B"})
    held = held_hours(s)
    assert sorted((d.host, d.temperature_c_avg) for d in device_health(s, held)) == [("n2", 80.0), ("n3", 65.0)]
    fleet_wide = {d.host: d for d in device_health(sel(None))}
    assert (fleet_wide["n1"].temperature_c_avg, fleet_wide["n1"].xid_samples) == (pytest.approx(220 / 3), 2)
    assert fleet_wide["n3"].xid_codes == [79]
