"""Without Prometheus, the demo hands the simulator's samples to the same rollup code: same figures."""
from datetime import datetime, timezone

import pytest
from django.db.models import Sum

from apps.accounting.models import QueuedDemandHour, UsageHour
from apps.ingest.pipeline import ingest
from apps.simulator.builders import build_scenario
from apps.simulator.demo import SimulatorFetcher, create_logins
from apps.simulator.expected import expected_figures
from tests.support.factories import make_cluster

pytestmark = pytest.mark.django_db


def dt(ts):
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def test_in_process_feed_matches_the_oracle():
    scenario = build_scenario(name="fallback", hours=3, interval_seconds=60, spelling="old", seed=5,
                              time_slicing=True)
    expected = expected_figures(scenario)
    cluster = make_cluster("fallback", prometheus_url="http://127.0.0.1:9")
    ingest(cluster, dt(scenario.start), dt(scenario.end), fetcher=SimulatorFetcher(scenario))
    by_ns = dict(UsageHour.objects.exclude(namespace="").values_list("namespace").annotate(s=Sum("gpu_seconds")))
    assert by_ns == {ns: pytest.approx(s) for ns, s in expected.allocated_gpu_seconds.items()}
    unallocated = UsageHour.objects.filter(namespace="").aggregate(s=Sum("gpu_seconds"))["s"]
    assert unallocated == pytest.approx(expected.unallocated_gpu_seconds)
    queued = dict(QueuedDemandHour.objects.values_list("namespace").annotate(q=Sum("queued_gpu_seconds")))
    assert queued == {ns: pytest.approx(q) for ns, q in expected.queued_gpu_seconds.items()}


def test_demo_logins_have_their_roles():
    logins = create_logins()
    from django.contrib.auth import authenticate
    from django.test import RequestFactory

    request = RequestFactory().post("/accounts/login/")     # sign-in throttling needs the request
    for username, (role, password) in logins.items():
        user = authenticate(request, username=username, password=password)
        assert user is not None and user.groups.filter(name=role).exists()
    assert authenticate(request, username="lead", password="lead-demo").teams.filter(name="research").exists()
