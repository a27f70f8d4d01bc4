"""A re-label moves a namespace from the hour it happens, never before (docs/teams-and-relabels.md).

One simulated cluster served by a real Prometheus, 2026-03-01 to 2026-04-16 UTC, sampled every
5 minutes, two whole H100s each held by one pod the whole time:

- `ml` is labelled team=alpha, re-labelled beta on 2026-03-15 00:00 and theta on 2026-04-10 00:00;
- `cv` is labelled team=gamma, re-labelled delta on 2026-03-15 10:00 (mid-day).

Every hour of a GPU is 1 GPU-hour, so the figures are counted on paper: March has 31 × 24 =
744 hours; alpha gets 14 × 24 = 336, beta 744 − 336 = 408; gamma 336 + 10 = 346, delta 398.
At 2.00 USD per GPU-hour the costs are twice the hours.
"""
from datetime import date, datetime, timezone

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from apps.accounting.actions.namespaces import do_assign_namespace
from apps.accounting.actions.periods import do_close_period
from apps.accounting.ledger.statements import statement
from apps.reports.statement_rows import statement_payload
from apps.accounting.usage.cells import UsageFilter, usage_cells
from apps.ingest.pipeline import ingest
from apps.simulator.builders import H100
from apps.simulator.scenario import Scenario, SimDevice, SimPod
from apps.teams.models import Namespace, NamespaceLabel, Team
from tests.support.factories import make_rate

from tests.support.prom import served
from tests.support.factories import make_cluster

pytestmark = [pytest.mark.django_db, pytest.mark.prometheus]


def utc(*args):
    return datetime(*args, tzinfo=timezone.utc)


def ts(*args):
    return int(utc(*args).timestamp())


START, END = utc(2026, 3, 1), utc(2026, 4, 16)
GPU_ML = SimDevice("gpu-node-00", 0, "GPU-00000000-0000-0000-0000-00000000a001", H100, "00000000:0B:00.0")
GPU_CV = SimDevice("gpu-node-00", 1, "GPU-00000000-0000-0000-0000-00000000a002", H100, "00000000:1B:00.0")


def relabel_scenario() -> Scenario:
    return Scenario(
        name="relabels", start=ts(2026, 3, 1), end=ts(2026, 4, 16), interval_seconds=300,
        devices=[GPU_ML, GPU_CV],
        pods=[SimPod("ml", "trainer-0", "trainer", [GPU_ML.key], ts(2026, 3, 1), ts(2026, 4, 16), "busy"),
              SimPod("cv", "detector-0", "detector", [GPU_CV.key], ts(2026, 3, 1), ts(2026, 4, 16), "busy")],
        namespace_teams={"ml": "alpha", "cv": "gamma"},
        namespace_relabels={"ml": [(ts(2026, 3, 15), "beta"), (ts(2026, 4, 10), "theta")],
                            "cv": [(ts(2026, 3, 15, 10), "delta")]},
        seed=5)


@pytest.fixture(scope="module")
def prometheus():
    with served(relabel_scenario()) as server:
        yield server


@pytest.fixture
def cluster(prometheus, settings):
    settings.INGEST_CHUNK_HOURS = 24      # a month in 31 chunks, not 372
    settings.BILLING_TIMEZONE = "UTC"
    make_rate(H100, "2.00", effective_from=date(2026, 1, 1))
    return make_cluster("relabels", prometheus_url=prometheus.url)


@pytest.fixture
def finance(db):
    return User.objects.create_superuser("finance", password="pw")


def run_ingest(cluster, start, end):
    ingest(cluster, start, end, trigger="test")


def usage_by_team(start, end, user):
    client = APIClient()
    client.force_authenticate(user)
    r = client.get("/api/v1/usage/", {"start": start.isoformat(), "end": end.isoformat(), "group_by": "team"})
    assert r.status_code == 200, r.content
    return {row["key"]: pytest.approx(row["allocated_gpu_hours"], abs=1e-6) for row in r.json()["results"]}


def chargeback_by_team(period, user):
    client = APIClient()
    client.force_authenticate(user)
    r = client.get("/api/v1/chargeback/", {"period": period, "group_by": "team"})
    assert r.status_code == 200, r.content
    body = r.json()
    return body, {row["key"]: (row["allocated_gpu_hours"], row["cost"]) for row in body["results"]
                  if row["key"] != "unallocated"}


MARCH_USAGE = {"alpha": 336.0, "beta": 408.0, "gamma": 346.0, "delta": 398.0}
MARCH_STATEMENT = {"alpha": (336.0, "672.00"), "beta": (408.0, "816.00"),
                   "gamma": (346.0, "692.00"), "delta": (398.0, "796.00")}
# April 1–16: 15 days = 360 hours; ml is beta for 9 days, theta for 6; cv is delta throughout.
APRIL_STATEMENT = {"beta": (216.0, "432.00"), "theta": (144.0, "288.00"), "delta": (360.0, "720.00")}


def test_a_month_splits_at_the_relabel_hour(cluster, finance):
    run_ingest(cluster, START, utc(2026, 4, 1))
    assert usage_by_team(START, utc(2026, 4, 1), finance) == MARCH_USAGE
    body, lines = chargeback_by_team("2026-03", finance)
    assert lines == MARCH_STATEMENT and body["closed"] is False
    # the relabel day read alone, and hours around the mid-day change of cv
    assert usage_by_team(utc(2026, 3, 15), utc(2026, 3, 16), finance) == {
        "beta": 24.0, "gamma": 10.0, "delta": 14.0}
    assert usage_by_team(utc(2026, 3, 15, 6), utc(2026, 3, 15, 12), finance) == {
        "beta": 6.0, "gamma": 4.0, "delta": 2.0}
    assert usage_by_team(utc(2026, 3, 14), utc(2026, 3, 15), finance) == {"alpha": 24.0, "gamma": 24.0}
    # the per-day cells the pages and the close read agree, day by day
    per_day = {}
    for c in usage_cells(UsageFilter(start=START, end=utc(2026, 4, 1))):
        if c.namespace:
            per_day[c.team] = per_day.get(c.team, 0.0) + c.gpu_seconds / 3600
    assert per_day == {team: pytest.approx(h, abs=1e-6) for team, h in MARCH_USAGE.items()}
    on_15th = {(c.namespace, c.team): c.gpu_seconds / 3600
               for c in usage_cells(UsageFilter(start=START, end=utc(2026, 4, 1))) if c.day == date(2026, 3, 15)}
    assert on_15th == {("ml", "beta"): 24.0, ("cv", "gamma"): 10.0, ("cv", "delta"): 14.0}


def test_an_admin_mapping_for_part_of_the_month_wins_over_labels(cluster, finance):
    run_ingest(cluster, START, utc(2026, 4, 1))
    do_assign_namespace(Namespace.objects.get(cluster=cluster, name="ml"), Team.objects.get_or_create(name="omega")[0],
                        date(2026, 3, 20), actor=finance)
    # ml: alpha 1st–14th (336 h), beta 15th–19th (5 × 24 = 120 h), omega 20th–31st (12 × 24 = 288 h)
    assert usage_by_team(START, utc(2026, 4, 1), finance) == {
        "alpha": 336.0, "beta": 120.0, "omega": 288.0, "gamma": 346.0, "delta": 398.0}
    _, lines = chargeback_by_team("2026-03", finance)
    assert lines == {"alpha": (336.0, "672.00"), "beta": (120.0, "240.00"), "omega": (288.0, "576.00"),
                     "gamma": (346.0, "692.00"), "delta": (398.0, "796.00")}


def test_a_relabel_after_the_close_leaves_the_closed_month(cluster, finance):
    run_ingest(cluster, START, utc(2026, 4, 1))
    do_close_period("2026-03", actor=finance)
    frozen = statement_payload(statement("2026-03"), "team", None)

    run_ingest(cluster, utc(2026, 4, 1), END)        # ml re-labelled theta on April 10th
    body, lines = chargeback_by_team("2026-03", finance)
    assert body["closed"] is True and lines == MARCH_STATEMENT
    assert statement_payload(statement("2026-03"), "team", None) == frozen
    body, lines = chargeback_by_team("2026-04", finance)
    assert lines == APRIL_STATEMENT
    assert not [line for row in body["results"] for line in row["lines"] if line["kind"] == "adjustment"]


def test_out_of_order_and_repeated_ingests_keep_the_history(cluster, finance):
    run_ingest(cluster, utc(2026, 4, 1), END)          # the later month first
    run_ingest(cluster, START, utc(2026, 4, 1))        # then a backfill of the earlier one
    run_ingest(cluster, utc(2026, 3, 14), utc(2026, 3, 16))   # and the relabel days again
    run_ingest(cluster, utc(2026, 4, 9, 22), utc(2026, 4, 10, 2))
    assert usage_by_team(START, utc(2026, 4, 1), finance) == MARCH_USAGE
    _, lines = chargeback_by_team("2026-04", finance)
    assert lines == APRIL_STATEMENT
    ml = Namespace.objects.get(cluster=cluster, name="ml")
    assert ml.label_team == "theta"                     # the latest value, for the admin list
    # one row per change, whatever the order and number of ingests
    assert list(NamespaceLabel.objects.filter(namespace__cluster=cluster).order_by("namespace__name", "valid_from")
                .values_list("namespace__name", "valid_from", "team_label")) == [
        ("cv", utc(2026, 3, 1), "gamma"), ("cv", utc(2026, 3, 15, 10), "delta"),
        ("ml", utc(2026, 3, 1), "alpha"), ("ml", utc(2026, 3, 15), "beta"), ("ml", utc(2026, 4, 10), "theta")]


def test_the_team_page_lists_the_move(cluster, finance, client):
    run_ingest(cluster, START, utc(2026, 4, 1))
    for name in ("alpha", "beta"):
        Team.objects.get_or_create(name=name)[0]
    client.force_login(finance)
    page = client.get("/teams/beta/", {"start": "2026-03-01", "end": "2026-04-01"})
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="namespace-history"' in html
    section = html[html.index('id="namespace-history"'):]
    section = section[:section.index("</table>")]
    assert "ml" in section and "alpha" in section and "2026-03-15 00:00" in section and "label" in section


# ---------------------------------------------------------------- who may claim a team

def test_known_teams_only_count_labels_naming_an_admins_team(cluster, finance):
    cluster.label_trust = "known_teams"
    cluster.save()
    for name in ("alpha", "gamma"):       # beta and delta are label values only
        Team.objects.get_or_create(name=name)[0]
    run_ingest(cluster, START, utc(2026, 4, 1))
    # ml: alpha 336 h, then beta (unknown) 408 h unassigned; cv: gamma 346 h, delta 398 h unassigned
    assert usage_by_team(START, utc(2026, 4, 1), finance) == {"alpha": 336.0, "gamma": 346.0, "unassigned": 806.0}


def test_approve_counts_a_claim_from_its_approval_and_queues_the_rest(cluster, finance, client):
    cluster.label_trust = "approve"
    cluster.save()
    run_ingest(cluster, START, utc(2026, 4, 1))
    # nothing approved: every hour is unassigned, and the four claims wait in the queue
    assert usage_by_team(START, utc(2026, 4, 1), finance) == {"unassigned": 1488.0}
    client.force_login(finance)
    page = client.get("/admin-tools/claims/").content.decode()
    for team in ("alpha", "beta", "gamma", "delta"):
        assert f"<td>{team}</td>" in page

    def decide(namespace, label, action, **extra):
        ns = Namespace.objects.get(cluster=cluster, name=namespace)
        r = client.post("/admin-tools/claims/", {"namespace": ns.pk, "team_label": label, "action": action, **extra})
        assert r.status_code == 302, r.content.decode()[:500]

    decide("ml", "alpha", "approve_since_claim")
    decide("cv", "gamma", "approve_since_claim")
    # beta (ml from the 15th) and delta (cv from the 15th, 10:00) wait: the hours stay with the old team
    assert usage_by_team(START, utc(2026, 4, 1), finance) == {"alpha": 744.0, "gamma": 744.0}
    # beta approved from the 20th: ml is alpha's for 19 days (456 h), beta's for 12 (288 h)
    from apps.teams.claims import do_decide_claim
    do_decide_claim(Namespace.objects.get(cluster=cluster, name="ml"), "beta", "approved", utc(2026, 3, 20, 0, 30),
                    actor=finance)
    decide("cv", "delta", "ignore")
    assert usage_by_team(START, utc(2026, 4, 1), finance) == {"alpha": 456.0, "beta": 288.0, "gamma": 744.0}
    page = client.get("/admin-tools/claims/").content.decode()
    assert "No claim is waiting." in page
    from apps.teams.models import AuditEvent
    assert AuditEvent.objects.filter(action__startswith="claim.").count() == 4


def test_a_map_from_the_queue_is_a_dated_admin_mapping(cluster, finance, client):
    cluster.label_trust = "approve"
    cluster.save()
    run_ingest(cluster, START, utc(2026, 4, 1))
    Team.objects.get_or_create(name="omega")[0]
    client.force_login(finance)
    ns = Namespace.objects.get(cluster=cluster, name="ml")
    r = client.post("/admin-tools/claims/", {"namespace": ns.pk, "team_label": "alpha", "action": "map", "team": "omega"})
    assert r.status_code == 302
    # mapped from the claim's first day (March 1st): all of ml's 744 hours are omega's
    assert usage_by_team(START, utc(2026, 4, 1), finance) == {"omega": 744.0, "unassigned": 744.0}
