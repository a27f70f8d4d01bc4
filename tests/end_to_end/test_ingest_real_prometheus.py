"""Simulated clusters, backfilled into a real Prometheus, ingested through `manage.py ingest`,
read back through /api/v1/usage/, and compared with the simulator's sample-by-sample oracle."""
from datetime import datetime, timezone

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db.models import Sum
from rest_framework.test import APIClient

from apps.accounting.models import QueuedDemandHour
from apps.clusters.models import Cluster
from apps.simulator.builders import build_scenario
from apps.simulator.expected import expected_figures

from tests.support.prom import served

pytestmark = [pytest.mark.django_db, pytest.mark.prometheus]

SCENARIOS = {
    "plain": dict(spelling="plain"),
    "exported": dict(spelling="exported", hostname_label="hostname"),
    "old": dict(spelling="old"),
    "time-sliced": dict(spelling="exported", time_slicing=True),
    # an HA Prometheus pair behind a query layer without dedup: every series twice, 7 s apart
    "ha-pair": dict(spelling="exported", time_slicing=True, replicas=("prom-0", "prom-1")),
}


def iso(ts):
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat().replace("+00:00", "Z")


@pytest.fixture(params=list(SCENARIOS), scope="module")
def scenario_server(request):
    scenario = build_scenario(name=f"e2e-{request.param}", hours=3, interval_seconds=30, seed=7,
                              **SCENARIOS[request.param])
    with served(scenario) as server:
        yield request.param, scenario, server


def usage(client, scenario, group_by, **extra):
    r = client.get("/api/v1/usage/", {"start": iso(scenario.start), "end": iso(scenario.end),
                                      "group_by": group_by, **extra})
    assert r.status_code == 200, r.content
    return {row["key"]: row for row in r.json()["results"]}


def hours(seconds):
    return pytest.approx(seconds / 3600, abs=2e-5)


def test_ingested_figures_equal_the_simulators(scenario_server):
    label, scenario, server = scenario_server
    call_command("ingest", "--cluster", f"sim-{label}", "--prometheus-url", server.url,
                 "--start", iso(scenario.start), "--end", iso(scenario.end), "--no-progress")
    cluster = Cluster.objects.get(name=f"sim-{label}")
    assert cluster.detected_interval_seconds == scenario.interval_seconds
    assert cluster.detected_label_spelling == scenario.spelling
    expected = expected_figures(scenario).as_plain_dicts()   # the oracle knows nothing of replicas

    client = APIClient()
    client.force_authenticate(User.objects.create_superuser("root", password="pw"))
    by_ns = usage(client, scenario, "namespace")
    assert set(by_ns) == set(expected.allocated_gpu_seconds)
    for ns, row in by_ns.items():
        assert row["allocated_gpu_hours"] == hours(expected.allocated_gpu_seconds[ns]), ns
        assert row["used_gpu_hours"] == hours(expected.used_gpu_seconds[ns]), ns
        assert row["idle_gpu_hours"] == hours(expected.idle_gpu_seconds.get(ns, 0.0)), ns
        assert row["mig_instance_hours"] == {p: hours(s) for p, s in expected.mig_seconds.get(ns, {}).items()}

    [fleet] = usage(client, scenario, "cluster").values()
    assert fleet["allocated_gpu_hours"] == hours(expected.allocated_total_gpu_seconds)
    assert fleet["unallocated_gpu_hours"] == hours(expected.unallocated_gpu_seconds)

    by_model = usage(client, scenario, "gpu_model")
    for model, capacity in expected.capacity_by_model.items():
        row = by_model[model]
        assert row["allocated_gpu_hours"] + row["unallocated_gpu_hours"] == hours(capacity), model
        assert row["allocated_gpu_hours"] == hours(expected.allocated_by_model.get(model, 0.0)), model

    by_team = usage(client, scenario, "team")
    for team, seconds in expected.allocated_by_team().items():
        assert by_team[team]["allocated_gpu_hours"] == hours(seconds), team

    queued = dict(QueuedDemandHour.objects.filter(cluster=cluster).values_list("namespace")
                  .annotate(q=Sum("queued_gpu_seconds")))
    assert queued == {ns: pytest.approx(q) for ns, q in expected.queued_gpu_seconds.items()}

    # The same window again, and an overlapping one: nothing moves.
    call_command("ingest", "--cluster", f"sim-{label}", "--start", iso(scenario.start + 1800),
                 "--end", iso(scenario.start + 7200 + 60), "--no-progress")
    assert usage(client, scenario, "namespace") == by_ns


def test_a_window_inside_the_history(scenario_server):
    """Hour buckets are half-open: ingest and ask for the middle hour only."""
    label, scenario, server = scenario_server
    start, end = scenario.start + 3600, scenario.start + 7200
    call_command("ingest", "--cluster", f"mid-{label}", "--prometheus-url", server.url,
                 "--start", iso(start), "--end", iso(end), "--no-progress")
    expected = expected_figures(scenario).within(start, end).as_plain_dicts()
    client = APIClient()
    client.force_authenticate(User.objects.create_superuser("root2", password="pw"))
    r = client.get("/api/v1/usage/", {"start": iso(start), "end": iso(end), "group_by": "cluster"})
    [fleet] = r.json()["results"]
    assert fleet["allocated_gpu_hours"] == hours(expected.allocated_total_gpu_seconds)
    assert fleet["unallocated_gpu_hours"] == hours(expected.unallocated_gpu_seconds)
