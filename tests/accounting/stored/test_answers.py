"""Stored month answers can never be stale: every kind of input change makes the next read
compute again, and what it shows is the change (docs/performance.md, "Stored month answers").

Each test reads March through the API (which stores the answer), changes one input the way the
portal or ingest does, and checks the next answer against hand-computed figures.
"""
from datetime import date, timedelta

import pytest
from django.db.models import Q
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounting.stored import versions as input_versions
from apps.accounting.actions.namespaces import do_assign_namespace
from apps.accounting.actions.periods import do_close_period, do_reopen_period
from apps.accounting.actions.rates import do_save_rate
from apps.accounting.stored.answers import compact_input_changes
from apps.accounting.stored.versions import read_inputs
from apps.accounting.models import MonthAnswer, MonthBody, NodePool, UsageHour
from apps.accounting.ledger.answer import month_lines, own_cells, window_cells
from apps.accounting.ledger.statements import compute_open
from apps.accounting.usage.cells import UsageFilter, usage_cells
from apps.clusters.models import Cluster
from apps.teams.claims import do_decide_claim
from apps.teams.models import LabelClaim, Team

from tests.support.factories import (label_namespace, make_namespace, make_pool, make_rate, make_team,
                        make_usage, two_teams_in_march, utc)

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]   # stored answers: Postgres triggers log the inputs
URL = "/api/v1/chargeback/"


@pytest.fixture
def march():
    """Team A's namespace ml: 3 H100 hours on 1 March; team B's cv: 1 hour. 2.00 per GPU-hour."""
    return two_teams_in_march()


def teams(api, finance, period="2026-03"):
    """{team: (allocated GPU-hours, cost)} as the API shows the month by team."""
    body = api(finance).get(URL, {"period": period, "group_by": "team"}).json()
    return {r["key"]: (r["allocated_gpu_hours"], r["cost"]) for r in body["results"]}


def lines_current(period="2026-03") -> bool:
    found = MonthAnswer.objects.filter(period=period, part=MonthAnswer.LINES).first()
    return found is not None and found.version == read_inputs([period]).lines(period)


def cells_current(period="2026-03") -> bool:
    found = MonthAnswer.objects.filter(period=period, part=MonthAnswer.CELLS).first()
    return found is not None and found.version == read_inputs([period]).cells(period)


def assert_stale_then_right(api, finance, expected, period="2026-03"):
    assert not lines_current(period), "the change left the stored answer looking current"
    assert teams(api, finance, period) == expected
    assert lines_current(period)
    assert month_lines(period) == compute_open(period).lines


def test_first_read_stores_the_answer_and_the_next_reads_it_back(march, finance, api):
    assert teams(api, finance) == {"A": (3.0, "6.00"), "B": (1.0, "2.00")}
    assert lines_current() and cells_current()
    body = MonthBody.objects.get(period="2026-03", key="chargeback?group_by=team&shared_idle=apart&scope=all")
    again = api(finance).get(URL, {"period": "2026-03", "group_by": "team"})
    assert again.content == bytes(body.body)            # served as stored, byte for byte
    assert month_lines("2026-03") == compute_open("2026-03").lines


def test_an_ingested_hour_is_shown_at_once(march, finance, api):
    teams(api, finance)
    make_usage(march["gpu"], "ml", utc(2026, 3, 20, 5), hours=1, pod="late")        # +1 h: 8.00
    assert not cells_current()
    assert_stale_then_right(api, finance, {"A": (4.0, "8.00"), "B": (1.0, "2.00")})


def test_rows_copied_in_with_raw_sql_are_seen_too(march, finance, api):
    """Ingest writes hours with COPY: the trigger sees them like any insert."""
    teams(api, finance)
    gpu = march["gpu"]
    with connection.cursor() as cur:
        with cur.cursor.copy(f"COPY {UsageHour._meta.db_table} (cluster_id, device_id, namespace, pod, hour_start, "
                             "node, gpu_model, mig_profile, gpu_fraction, sample_count, gpu_seconds, used_gpu_seconds, "
                             "idle_gpu_seconds, mig_seconds, unknown_util_samples, idle_prefix_seconds, "
                             "idle_suffix_seconds, idle_max_run_seconds, idle_whole_hour, dra_claim) FROM STDIN") as c:
            c.write_row((gpu.cluster_id, gpu.pk, "cv", "copied", utc(2026, 3, 9, 1), gpu.host, gpu.model_name, "",
                         1.0, 60, 1800.0, 900.0, 0.0, 0.0, 0, 0.0, 0.0, 0.0, False, False))   # B: +0.5 h, +1.00
    assert_stale_then_right(api, finance, {"A": (3.0, "6.00"), "B": (1.5, "3.00")})


def test_another_months_ingest_leaves_this_month_current(march, finance, api):
    teams(api, finance)
    before = MonthBody.objects.get(period="2026-03", key="chargeback?group_by=team&shared_idle=apart&scope=all").rendered_at
    make_usage(march["gpu"], "ml", utc(2026, 4, 2), hours=5)
    make_usage(march["gpu"], "ml", utc(2026, 2, 27), hours=5)
    assert lines_current() and cells_current()
    assert teams(api, finance) == {"A": (3.0, "6.00"), "B": (1.0, "2.00")}
    after = MonthBody.objects.get(period="2026-03", key="chargeback?group_by=team&shared_idle=apart&scope=all").rendered_at
    assert after == before                                # not even re-rendered


def test_a_rate_edit_reprices_without_rereading_usage(march, finance, api, admin_user):
    teams(api, finance)
    rate = march["rate"]
    rate.hourly_rate = rate.hourly_rate + 1                                         # 3.00: A 9.00, B 3.00
    do_save_rate(admin_user, rate)
    assert cells_current(), "an hourly rate is no reason to read usage again"
    assert_stale_then_right(api, finance, {"A": (3.0, "9.00"), "B": (1.0, "3.00")})


def test_a_new_rate_from_mid_month_splits_the_lines(march, finance, api):
    teams(api, finance)
    make_usage(march["gpu"], "ml", utc(2026, 3, 20), hours=2, pod="later")           # 2 h at the new rate
    make_rate(hourly_rate="5.00", effective_from=date(2026, 3, 15))                 # 3 × 2 + 2 × 5 = 16.00
    assert_stale_then_right(api, finance, {"A": (5.0, "16.00"), "B": (1.0, "2.00")})


def test_a_node_pool_edit_changes_the_price_class(march, finance, api):
    teams(api, finance)
    make_rate(hourly_rate="0.50", price_class="spot")
    pool = make_pool(march["cluster"], "node-2", "spot")                             # B: 1 h × 0.50
    assert not cells_current()
    assert_stale_then_right(api, finance, {"A": (3.0, "6.00"), "B": (1.0, "0.50")})
    pool.host_pattern = "node-9"
    pool.save()
    assert_stale_then_right(api, finance, {"A": (3.0, "6.00"), "B": (1.0, "2.00")})
    NodePool.objects.all().delete()
    assert teams(api, finance) == {"A": (3.0, "6.00"), "B": (1.0, "2.00")}


def test_a_namespace_move_moves_its_hours(march, finance, api):
    make_usage(march["gpu"], "ml", utc(2026, 3, 20), hours=2, pod="later")
    teams(api, finance)
    do_assign_namespace(march["cluster"].namespaces.get(name="ml"), make_team("C"), date(2026, 3, 15))
    assert_stale_then_right(api, finance, {"A": (3.0, "6.00"), "B": (1.0, "2.00"), "C": (2.0, "4.00")})


def test_a_relabel_moves_the_hours_after_it(march, finance, api):
    lab = make_namespace(march["cluster"], "lab", label_team="D")
    make_usage(march["other"], "lab", utc(2026, 3, 10, 10), hours=4, pod="nb")        # 10:00-14:00
    teams(api, finance)
    label_namespace(lab, "E", since=utc(2026, 3, 10, 12))                            # from 12:00: E
    assert_stale_then_right(api, finance, {"A": (3.0, "6.00"), "B": (1.0, "2.00"), "D": (2.0, "4.00"),
                                           "E": (2.0, "4.00")})


def test_approving_a_claim_and_changing_label_trust(march, finance, api, admin_user):
    prod = march["cluster"]
    lab = make_namespace(prod, "lab", label_team="F")
    make_usage(march["other"], "lab", utc(2026, 3, 10, 10), hours=4, pod="nb")        # 10:00-14:00
    Cluster.objects.filter(pk=prod.pk).update(label_trust=Cluster.LabelTrust.APPROVE)
    assert teams(api, finance)["unassigned"] == (4.0, "8.00")                       # F not approved yet
    do_decide_claim(lab, "F", LabelClaim.Decision.APPROVED, utc(2026, 3, 10, 13), actor=admin_user)
    assert_stale_then_right(api, finance, {"A": (3.0, "6.00"), "B": (1.0, "2.00"), "unassigned": (3.0, "6.00"),
                                           "F": (1.0, "2.00")})
    prod.refresh_from_db()
    prod.label_trust = Cluster.LabelTrust.TRUSTED
    prod.save()
    assert_stale_then_right(api, finance, {"A": (3.0, "6.00"), "B": (1.0, "2.00"), "F": (4.0, "8.00")})


def test_renaming_a_team_or_a_cluster(march, finance, api):
    teams(api, finance)
    Team.objects.filter(name="A").update(name="A2")
    assert_stale_then_right(api, finance, {"A2": (3.0, "6.00"), "B": (1.0, "2.00")})
    prod = march["cluster"]
    prod.name = "production"
    prod.save()
    assert not lines_current()
    body = api(finance).get(URL, {"period": "2026-03", "group_by": "namespace"}).json()
    assert sorted(r["key"] for r in body["results"]) == ["production/cv", "production/ml"]


def test_updating_what_answers_do_not_read_keeps_them_current(march, finance, api):
    teams(api, finance)
    prod = march["cluster"]
    prod.ingested_until = utc(2026, 4, 1)       # ingest's watermark: no answer reads it
    prod.save()
    ml = prod.namespaces.get(name="ml")
    ml.label_seen_at = utc(2026, 4, 1)
    ml.save()
    Team.objects.filter(name="A").update(cost_centre="CC-1")
    assert lines_current() and cells_current()


def test_late_data_for_a_closed_month_is_found_by_ingest_not_by_reads(march, finance, api, admin_user):
    gpu = march["gpu"]
    make_usage(gpu, "ml", utc(2026, 2, 10), hours=2)                                 # February: A 4.00
    do_close_period("2026-02", actor=finance)
    assert teams(api, finance) == {"A": (3.0, "6.00"), "B": (1.0, "2.00")}          # no adjustment
    # Showing March after the close reads no frozen cells: February's late data is stored (none).
    for _ in range(2):
        month_lines("2026-03")
        with CaptureQueriesContext(connection) as seen:
            shown = month_lines("2026-03")
        assert not [q["sql"] for q in seen.captured_queries if "accounting_frozenday" in q["sql"]]
        assert shown == compute_open("2026-03").lines
    # An hour ingested into February marks it: March now shows the adjustment (1 h × 2.00).
    make_usage(gpu, "ml", utc(2026, 2, 20), hours=1, pod="late")
    body = api(finance).get(URL, {"period": "2026-03", "group_by": "team"}).json()
    row = next(r for r in body["results"] if r["key"] == "A")
    adjustments = [(x["adjusts_period"], x["allocated_gpu_hours"], x["cost"]) for x in row["lines"]
                   if x["kind"] == "adjustment"]
    assert adjustments == [("2026-02", 1.0, "2.00")] and row["cost"] == "8.00"
    assert month_lines("2026-03") == compute_open("2026-03").lines
    # Reopening February puts the hour back in February's own statement; March has none.
    do_reopen_period("2026-02", admin_user)
    assert teams(api, finance) == {"A": (3.0, "6.00"), "B": (1.0, "2.00")}
    assert teams(api, finance, "2026-02") == {"A": (3.0, "6.00")}
    assert month_lines("2026-03") == compute_open("2026-03").lines


def test_closing_copies_the_stored_answer_when_it_is_current(march, finance, api):
    """A prepared month is closed from its stored cells; the result is what computing gives."""
    from apps.accounting.ledger.frozen import frozen_cells
    from apps.accounting.models import StatementLine
    from apps.accounting.ledger.answer import prepare_month

    make_usage(march["gpu"], "ml", utc(2026, 3, 31, 23), hours=2, pod="edge")       # into April's first hour
    prepare_month("2026-03")
    expected = compute_open("2026-03", for_closing=True)
    do_close_period("2026-03", actor=finance)
    frozen = sorted((c.namespace, c.team, c.day, c.gpu_seconds)
                    for _, _, c in frozen_cells(Q(period__period="2026-03")))
    assert frozen == sorted((c.namespace, c.team, c.day, c.gpu_seconds) for c in expected.cells)
    assert sorted(StatementLine.objects.values_list("team", "allocated_gpu_seconds", "cost")) == sorted(
        (x.team, float(x.allocated_gpu_seconds), x.cost) for x in expected.lines)
    assert teams(api, finance) == {"A": (4.0, "8.00"), "B": (1.0, "2.00")}


def test_a_billing_zone_change_is_a_new_version(march, finance, api, settings):
    teams(api, finance)
    utc_version = read_inputs(["2026-03"]).lines("2026-03")
    settings.BILLING_TIMEZONE = "Asia/Tokyo"        # March starts 15:00 UTC on 28 February
    assert read_inputs(["2026-03"]).lines("2026-03") != utc_version
    assert month_lines("2026-03") == compute_open("2026-03").lines


def test_a_deploy_that_changes_the_math_is_a_new_version(march, finance, api, monkeypatch):
    teams(api, finance)
    monkeypatch.setattr(input_versions, "CODE_VERSION", input_versions.CODE_VERSION + "-next")
    assert not lines_current()
    assert teams(api, finance) == {"A": (3.0, "6.00"), "B": (1.0, "2.00")}


def test_compacting_the_log_re_proves_every_answer(march, finance, api):
    teams(api, finance)
    for h in range(3):
        make_usage(march["gpu"], "ml", utc(2026, 3, 5, h), hours=1, pod=f"p{h}")
    teams(api, finance)
    assert compact_input_changes() > 0
    assert not lines_current()
    assert teams(api, finance) == {"A": (6.0, "12.00"), "B": (1.0, "2.00")}


def test_the_usage_month_is_the_stored_cells_and_a_team_lead_sees_their_part(march, finance, team_lead, api):
    make_team("A", lead=team_lead)
    start, end = utc(2026, 3, 1), utc(2026, 4, 1)
    whole = api(finance).get("/api/v1/usage/", {"start": "2026-03-01", "end": "2026-04-01", "group_by": "team"})
    assert [(r["key"], r["allocated_gpu_hours"], r["cost"]) for r in whole.json()["results"]] == [
        ("A", 3.0, "6.00"), ("B", 1.0, "2.00")]
    assert sorted(own_cells("2026-03"), key=repr) == sorted(usage_cells(UsageFilter(start, end), per_day=False),
                                                            key=repr)
    lead = api(team_lead).get("/api/v1/usage/", {"start": "2026-03-01", "end": "2026-04-01", "group_by": "team"})
    assert [(r["key"], r["allocated_gpu_hours"]) for r in lead.json()["results"]] == [("A", 3.0)]
    scoped = UsageFilter(start, end, teams=frozenset({"A"}))
    assert window_cells(scoped) == [c for c in own_cells("2026-03") if c.team == "A"]
    # A window that is not a whole month is computed as before.
    part = UsageFilter(start, end - timedelta(hours=1))
    assert sorted(window_cells(part), key=repr) == sorted(usage_cells(part, per_day=False), key=repr)


def test_nightly_housekeeping_drops_what_closed_months_no_longer_read(march, finance, api):
    from apps.accounting.tasks import compact_input_changes as nightly

    teams(api, finance)
    make_usage(march["gpu"], "ml", utc(2026, 2, 3), hours=1)
    teams(api, finance, "2026-02")
    do_close_period("2026-02", actor=finance)
    done = nightly()
    assert done["closed_months_pruned"] == ["2026-02"] and done["log_rows_removed"] > 0
    assert set(MonthAnswer.objects.values_list("period", "part")) == {
        ("2026-02", "delta"), ("2026-03", "cells"), ("2026-03", "lines"),
        *(("2026-03", f"day{d:02d}") for d in range(1, 32))}      # March's 31 day parts stay
    assert teams(api, finance, "2026-02") == {"A": (1.0, "2.00")}
    assert teams(api, finance) == {"A": (3.0, "6.00"), "B": (1.0, "2.00")}
    assert month_lines("2026-03") == compute_open("2026-03").lines


def test_a_closed_months_answer_keeps_the_zone_it_was_closed_in(march, finance, api, settings):
    """A closed month is read in its close's zone (docs/chargeback.md, "3. Close the month"): a
    later BILLING_TIMEZONE change neither re-buckets it nor moves the window it echoes."""
    do_close_period("2026-03", actor=finance)
    utc_start = api(finance).get(URL, {"period": "2026-03"}).json()["start"]
    settings.BILLING_TIMEZONE = "Asia/Tokyo"
    tokyo = api(finance).get(URL, {"period": "2026-03"}).json()
    assert (utc_start, tokyo["start"], tokyo["closed"]) == ("2026-03-01T00:00:00Z", "2026-03-01T00:00:00Z", True)
