"""A messy month-end in a billing zone with DST, against the simulator's oracle.

Europe/Berlin, where 2021-10-31 is both the day summer time ends (a 25-hour day: the clocks go
back at 01:00 UTC) and the last day of the month (October ends at 2021-10-31 23:00 UTC, when
it is midnight CET). Two clusters served by real Prometheus servers, 30 hours each from
2021-10-30 20:00 UTC to 2021-11-01 02:00 UTC:

- `dst-ha`: an HA pair (every series twice, 7 s apart), time-sliced notebooks, MIG A100s and an
  A30, pending pods, a spot node pool, and namespace `batch` re-labelled from team `platform`
  to `data` at 2021-10-31 12:00 UTC;
- `dst-b`: a plain second cluster at another scrape interval (30 s, against 60 s).

The rate card changes the H100's price on the DST day (2.00 → 2.60 from 2021-10-31, a local
date), prices A100 spot apart from on-demand, and gives the A100 `1g.10gb` profile its own
per-instance rate. The oracle below prices each sample from the scenario's ground truth by
the rules of docs/figures.md ("Cost"), without any portal code; every usage, statement and
queued figure must agree within 0.1 %.

Hand-computed anchors: each cluster's capacity is 8 whole GPUs plus a MIG node of three A100s
(3g + 2g + 1g + 1g = 7/7 each) and an A30 (2g + 1g + 1g = 4/4): 12 GPUs. The 25-hour local day
of October 31st therefore holds 12 × 25 = 300 GPU-hours per cluster, 600 in all; October's
share of the 30-hour window is 27 hours (20:00 UTC on the 30th to 23:00 UTC on the 31st).
"""
from collections import defaultdict
from datetime import date, datetime, timezone
from decimal import Decimal
from fnmatch import fnmatch
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.db.models import Sum
from rest_framework.test import APIClient

from apps.accounting.actions.periods import do_close_period
from apps.accounting.models import QueuedDemandHour
from apps.clusters.models import Cluster
from apps.ingest.pipeline import ingest
from apps.simulator.builders import A30, A100, H100, build_scenario
from apps.simulator.expected import expected_figures
from apps.simulator.truth import iter_device_truth
from tests.support.factories import make_pool, make_rate

from tests.support.prom import served
from tests.support.factories import make_cluster

pytestmark = [pytest.mark.django_db, pytest.mark.prometheus]

BERLIN = ZoneInfo("Europe/Berlin")
START = datetime(2021, 10, 30, 20, tzinfo=timezone.utc)
END = datetime(2021, 11, 1, 2, tzinfo=timezone.utc)
OCTOBER_END = datetime(2021, 10, 31, 23, tzinfo=timezone.utc)       # midnight CET
DST_DAY = (datetime(2021, 10, 30, 22, tzinfo=timezone.utc), OCTOBER_END)   # 25 hours
RELABEL_AT = int(datetime(2021, 10, 31, 12, tzinfo=timezone.utc).timestamp())
SPOT_HOSTS = "gpu-node-01"          # the A100 node of build_scenario
TOLERANCE = 1e-3                    # 0.1 %

# (model, profile, price class) -> [(effective from, hourly rate)], the rate card of the test.
RATES = {
    (H100, "", "on_demand"): [(date(2021, 1, 1), "2.00"), (date(2021, 10, 31), "2.60")],
    (A100, "", "on_demand"): [(date(2021, 1, 1), "1.40")],
    (A100, "", "spot"): [(date(2021, 1, 1), "0.50")],
    (A100, "1g.10gb", "on_demand"): [(date(2021, 1, 1), "0.30")],   # per instance-hour
    (A30, "", "on_demand"): [(date(2021, 1, 1), "1.00")],
}


def _scenarios():
    ha = build_scenario(name="dst-ha", start=int(START.timestamp()), hours=30, interval_seconds=60, seed=21,
                        spelling="exported", time_slicing=True, replicas=("prom-0", "prom-1"))
    ha.namespace_relabels = {"batch": [(RELABEL_AT, "data")]}
    plain = build_scenario(name="dst-b", start=int(START.timestamp()), hours=30, interval_seconds=30, seed=22,
                           spelling="plain")
    return {"dst-ha": ha, "dst-b": plain}


SCENARIOS = _scenarios()


def rate_in_force(model, profile, price_class, day):
    """(hourly rate, basis) as docs/figures.md states it: a profile's own rate per instance-hour,
    else the parent model's per GPU-hour."""
    for key, basis in (((model, profile, price_class), "instance"), ((model, "", price_class), "gpu")):
        if profile == "" and basis == "instance":
            continue
        found = [Decimal(r) for since, r in RATES.get(key, []) if since <= day]
        if found:
            return found[-1], basis
    raise AssertionError(f"the test's rate card misses {model} {profile} {price_class}")


class Oracle:
    """Every figure, sample by sample from the ground truth, per team and window."""

    def __init__(self):
        self.samples = []   # (ts, cluster, team, gpu_seconds, used_seconds, cost)
        self.capacity = []  # (ts, cluster, gpu_seconds)

    def add(self, cluster_name, scenario, pools):
        interval = scenario.interval_seconds
        for truth in iter_device_truth(scenario):
            device = truth.device
            price_class = "spot" if any(fnmatch(device.host, p) for p in pools) else "on_demand"
            for seg in truth.segments:
                for k in range(seg.k0, seg.k1):
                    ts = scenario.timestamps[k]
                    self.capacity.append((ts, cluster_name, interval * device.gpu_fraction))
                    day = datetime.fromtimestamp(ts, BERLIN).date()
                    rate, basis = rate_in_force(device.model, device.mig_profile or "", price_class, day)
                    if not seg.pods:     # unallocated: priced too, and shown apart as `unallocated`
                        billed = interval if basis == "instance" else interval * device.gpu_fraction
                        self.samples.append((ts, cluster_name, "unallocated", interval * device.gpu_fraction,
                                             0.0, rate * Decimal(billed) / 3600))
                        continue
                    share = 1 / len(seg.pods)
                    for pod in seg.pods:
                        gpu_seconds = interval * device.gpu_fraction * share
                        billed = interval * share if basis == "instance" else gpu_seconds
                        team = scenario.team_at(pod.namespace, ts) or "unassigned"
                        self.samples.append((ts, cluster_name, team, gpu_seconds,
                                             gpu_seconds * truth.utilization[k], rate * Decimal(billed) / 3600))

    def by_team(self, start, end):
        lo, hi = start.timestamp(), end.timestamp()
        out = defaultdict(lambda: [0.0, 0.0, Decimal(0)])
        for ts, _cluster, team, gpu_seconds, used, cost in self.samples:
            if lo <= ts < hi:
                row = out[team]
                row[0] += gpu_seconds / 3600
                row[1] += used / 3600
                row[2] += cost
        return dict(out)

    def capacity_hours(self, start, end):
        lo, hi = start.timestamp(), end.timestamp()
        return sum(s for ts, _c, s in self.capacity if lo <= ts < hi) / 3600


def close(actual, expected):
    return actual == pytest.approx(expected, rel=TOLERANCE, abs=1e-6)


@pytest.fixture(scope="module")
def servers():
    with served(SCENARIOS["dst-ha"]) as ha, served(SCENARIOS["dst-b"]) as plain:
        yield {"dst-ha": ha, "dst-b": plain}


@pytest.fixture
def world(servers, settings):
    settings.BILLING_TIMEZONE = "Europe/Berlin"
    for (model, profile, price_class), steps in RATES.items():
        for since, rate in steps:
            make_rate(model, rate, effective_from=since, mig_profile=profile, price_class=price_class)
    oracle = Oracle()
    for name, scenario in SCENARIOS.items():
        cluster = make_cluster(name, prometheus_url=servers[name].url)
        pools = []
        if name == "dst-ha":
            make_pool(cluster, SPOT_HOSTS, "spot")
            pools.append(SPOT_HOSTS)
        ingest(cluster, START, END, trigger="test")
        oracle.add(name, scenario, pools)
    client = APIClient()
    client.force_authenticate(User.objects.create_superuser("finance", password="pw"))
    return client, oracle


def api(client, path, **params):
    r = client.get(path, params)
    assert r.status_code == 200, r.content
    return r.json()


def utc_param(dt):
    return dt.isoformat().replace("+00:00", "Z")


def test_the_dst_day_holds_25_hours_of_every_gpu(world):
    client, oracle = world
    body = api(client, "/api/v1/usage/", group_by="cluster", start=utc_param(DST_DAY[0]), end=utc_param(DST_DAY[1]))
    capacity = sum(row["allocated_gpu_hours"] + row["unallocated_gpu_hours"] for row in body["results"])
    assert oracle.capacity_hours(*DST_DAY) == pytest.approx(600.0)
    assert capacity == pytest.approx(600.0, rel=TOLERANCE)


def test_usage_by_team_on_the_dst_day_agrees_with_the_oracle(world):
    client, oracle = world
    body = api(client, "/api/v1/usage/", group_by="team", start=utc_param(DST_DAY[0]), end=utc_param(DST_DAY[1]))
    rows = {row["key"]: row for row in body["results"]}
    expected = oracle.by_team(*DST_DAY)
    expected.pop("unallocated")
    assert {"platform", "data"} <= set(expected)          # the re-label splits `batch` that day
    assert set(rows) == set(expected)
    for team, (allocated, used, cost) in expected.items():
        assert close(rows[team]["allocated_gpu_hours"], allocated), team
        assert close(rows[team]["used_gpu_hours"], used), team
        assert close(float(rows[team]["cost"]), float(cost)), team


def test_a_date_only_window_is_the_local_day(world):
    """`start=2021-10-31&end=2021-11-01` means the Berlin day: the same 25 hours as above."""
    client, _ = world
    by_instant = api(client, "/api/v1/usage/", group_by="team", start=utc_param(DST_DAY[0]),
                     end=utc_param(DST_DAY[1]))["results"]
    by_date = api(client, "/api/v1/usage/", group_by="team", start="2021-10-31", end="2021-11-01")["results"]
    assert by_date == by_instant


@pytest.mark.parametrize("period, start, end", [("2021-10", START, OCTOBER_END), ("2021-11", OCTOBER_END, END)])
def test_each_local_month_statement_agrees_with_the_oracle(world, period, start, end):
    client, oracle = world
    body = api(client, "/api/v1/chargeback/", period=period, group_by="team")
    rows = {row["key"]: row for row in body["results"]}
    expected = oracle.by_team(start, end)
    assert set(rows) == set(expected)
    for team, (allocated, _used, cost) in expected.items():
        assert close(rows[team]["allocated_gpu_hours"], allocated), team
        assert close(float(rows[team]["cost"]), float(cost)), (team, rows[team]["cost"], cost)
    assert {"platform", "data"} <= set(expected) if period == "2021-10" else "data" in expected
    total = sum(cost for _a, _u, cost in expected.values())
    assert close(float(body["totals_by_currency"]["USD"]), float(total))


def test_october_closed_keeps_its_figures_and_november_has_no_adjustment(world):
    client, oracle = world
    before = api(client, "/api/v1/chargeback/", period="2021-10", group_by="team")
    do_close_period("2021-10", actor=User.objects.get(username="finance"))
    after = api(client, "/api/v1/chargeback/", period="2021-10", group_by="team")
    assert after["closed"] is True and after["results"] == before["results"]
    # Ingesting the month-end again (as a late re-run would) moves nothing across the boundary.
    for cluster in Cluster.objects.all():
        ingest(cluster, datetime(2021, 10, 31, 20, tzinfo=timezone.utc), END, trigger="test")
    november = api(client, "/api/v1/chargeback/", period="2021-11", group_by="team")
    assert not [line for row in november["results"] for line in row["lines"] if line["kind"] == "adjustment"]


def test_namespace_figures_and_queued_demand_agree_with_the_oracle(world):
    client, _ = world
    rows = {row["key"]: row for row in api(client, "/api/v1/usage/", group_by="namespace",
                                           start=utc_param(START), end=utc_param(END))["results"]}
    allocated, used, idle, mig = defaultdict(float), defaultdict(float), defaultdict(float), defaultdict(
        lambda: defaultdict(float))
    for name, scenario in SCENARIOS.items():
        e = expected_figures(scenario)
        for ns, s in e.allocated_gpu_seconds.items():
            allocated[ns] += s / 3600
            used[ns] += e.used_gpu_seconds.get(ns, 0.0) / 3600
            idle[ns] += e.idle_gpu_seconds.get(ns, 0.0) / 3600
        for ns, profiles in e.mig_seconds.items():
            for profile, s in profiles.items():
                mig[ns][profile] += s / 3600
        cluster = Cluster.objects.get(name=name)
        queued = dict(QueuedDemandHour.objects.filter(cluster=cluster).values_list("namespace")
                      .annotate(q=Sum("queued_gpu_seconds")))
        assert set(queued) == set(e.queued_gpu_seconds), name
        for ns, q in e.queued_gpu_seconds.items():
            assert close(queued[ns], q), (name, ns)
    assert set(rows) == set(allocated)
    for ns, row in rows.items():
        assert close(row["allocated_gpu_hours"], allocated[ns]), ns
        assert close(row["used_gpu_hours"], used[ns]), ns
        assert close(row["idle_gpu_hours"], idle[ns]), ns
        assert set(row["mig_instance_hours"]) == set(mig.get(ns, {})), ns
        for profile, h in mig.get(ns, {}).items():
            assert close(row["mig_instance_hours"][profile], h), (ns, profile)
