"""Memory, power, temperature and XIDs summed per hour by Prometheus give the figures raw samples give."""
from datetime import datetime, timezone

import pytest

from apps.accounting.models import DeviceHealthHour, UsageHour
from apps.ingest.pipeline import ingest
from apps.ingest.prometheus import PrometheusClient
from apps.simulator.builders import build_scenario
from tests.support.prom import served
from tests.support.factories import make_cluster

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]
FIELDS = ("fb_used_mib_avg", "fb_used_mib_max", "power_watts_avg", "energy_joules", "gpu_seconds")


def figures(cluster):
    usage = {(u.device.uuid, u.device.mig_instance_id, u.namespace, u.pod, u.hour_start):
             tuple(getattr(u, f) for f in FIELDS) for u in UsageHour.objects.filter(cluster=cluster).select_related("device")}
    health = {(h.device.uuid, h.device.mig_instance_id, h.hour_start):
              (h.power_watts_avg, h.energy_joules, h.temperature_c_avg, h.temperature_c_max, h.seconds_above_83c,
               float(h.xid_samples), float(sum(h.xid_codes)))
              for h in DeviceHealthHour.objects.filter(cluster=cluster).select_related("device")}
    return usage, health


def test_hourly_aggregates_equal_raw_rollups(settings, monkeypatch):
    answered = []
    original = PrometheusClient.hourly

    def spy(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        answered.append(out)   # None: Prometheus could not answer exactly, and the series came raw
        return out

    monkeypatch.setattr(PrometheusClient, "hourly", spy)
    scenario = build_scenario(name="agg", hours=5, interval_seconds=60, seed=9)
    start = datetime.fromtimestamp(scenario.start, tz=timezone.utc)
    end = datetime.fromtimestamp(scenario.end, tz=timezone.utc)
    with served(scenario) as server:
        assert PrometheusClient(server.url).range_closed_on_left() is not None
        results = {}
        for aggregate in (False, True):
            settings.INGEST_PROMETHEUS_AGGREGATES = aggregate
            # temperatures × 1.15 run some GPUs over 83 °C: those series come raw, the rest hourly
            cluster = make_cluster(f"agg-{aggregate}", prometheus_url=server.url,
                                             metric_overrides={"temperature": {"scale": 1.15}})
            ingest(cluster, start, end)
            results[aggregate] = figures(cluster)
    # the aggregated path was taken, not the raw fallback (XID errors: only the erroring hours)
    assert answered and all(out is not None for out in answered) and any(answered)
    (raw_usage, raw_health), (agg_usage, agg_health) = results[False], results[True]
    assert raw_usage.keys() == agg_usage.keys() and len(raw_usage) > 20
    assert raw_health.keys() == agg_health.keys()
    assert any(v[0] is not None for v in raw_usage.values())
    for key, raw in raw_usage.items():
        assert agg_usage[key] == pytest.approx(raw, rel=1e-9, abs=1e-9), key
    assert any(v[4] > 0 for v in raw_health.values()) and any(v[4] == 0 for v in raw_health.values())
    assert any(v[5] > 0 for v in raw_health.values())   # XIDs seen
    for key, raw in raw_health.items():
        assert agg_health[key] == pytest.approx(raw, rel=1e-9, abs=1e-9), key


def test_xid_hours_without_an_error_never_travel(settings):
    """XID errors matter only where there was one: Prometheus answers the per-hour maxima that are
    not 0 (`max_over_time(…) != 0`), so an answer holds the erroring series alone."""
    scenario = build_scenario(name="xid-hours", hours=5, interval_seconds=60, seed=9)
    with served(scenario) as server:
        client = PrometheusClient(server.url)
        both = {nonzero: client.hourly("DCGM_FI_DEV_XID_ERRORS", (), scenario.start, scenario.end, ("max",), nonzero)
                for nonzero in (False, True)}
    erroring = [h for h in both[False] if any(mx != 0 for *_, mx in h.hours)]
    assert erroring and len(erroring) < len(both[False])
    assert sorted((tuple(sorted(h.labels.items())), [x for x in h.hours if x[3] != 0]) for h in erroring) == \
        sorted((tuple(sorted(h.labels.items())), h.hours) for h in both[True])
