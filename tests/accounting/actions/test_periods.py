"""A closed month never moves: re-ingest, rate edits and team moves leave it as it was; late
data becomes an adjustment in the next open month; only an admin reopens."""
from datetime import date
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from apps.accounting.actions.audit import ActionError, NotAllowed
from apps.accounting.actions.namespaces import do_assign_namespace
from apps.accounting.actions.periods import do_close_period, do_reopen_period
from apps.accounting.models import BillingPeriod, Rate, UsageHour
from apps.accounting.ledger.statements import statement
from apps.reports.statement_rows import statement_payload
from apps.teams.models import AuditEvent, NamespaceAssignment

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_team, make_usage, make_user, utc

pytestmark = pytest.mark.django_db


def team_costs(period):
    p = statement_payload(statement(period), "team", None)
    return {r["key"]: (r["allocated_gpu_hours"], r["cost"]) for r in p["results"]}, p


@pytest.fixture
def march(db):
    """Team A ran 10 GPU-hours in March at 2.00/h: 20.00."""
    prod = make_cluster()
    ns = make_namespace(prod, "ml", "A")
    make_team("B")
    rate = make_rate(hourly_rate="2.00")
    gpu = make_device(prod)
    make_usage(gpu, "ml", utc(2026, 3, 10), hours=10)
    return prod, ns, rate, gpu


def test_closed_month_ignores_reingest_rate_edit_and_team_move(march, finance):
    prod, ns, rate, gpu = march
    do_close_period("2026-03", actor=finance)
    before, p = team_costs("2026-03")
    assert before == {"A": (10.0, "20.00")} and p["closed"] is True

    UsageHour.objects.filter(namespace="ml").update(gpu_seconds=1800.0)          # re-ingest rewrites rows
    rate.hourly_rate = Decimal("9.00")                                            # rate edit
    rate.save()
    NamespaceAssignment.objects.create(namespace=ns, team=make_team("B"), effective_from=date(2026, 1, 1))

    after, _ = team_costs("2026-03")
    assert after == before
    event = AuditEvent.objects.get(action="period.close")
    assert event.actor == finance and event.target == "2026-03"
    assert event.new_value["cost_by_currency"] == {"USD": "20.00"}


def test_late_data_becomes_an_adjustment_in_the_next_open_month(march, finance):
    prod, ns, rate, gpu = march
    do_close_period("2026-03", actor=finance)
    make_usage(gpu, "ml", utc(2026, 3, 31, 20), hours=2, pod="late")     # arrives after the close
    make_usage(gpu, "ml", utc(2026, 4, 2), hours=1)                        # April's own usage

    assert team_costs("2026-03")[0] == {"A": (10.0, "20.00")}
    april, p = team_costs("2026-04")
    lines = p["results"][0]["lines"]
    adj = [line for line in lines if line["kind"] == "adjustment"]
    assert [(a["adjusts_period"], a["allocated_gpu_hours"], a["cost"]) for a in adj] == [("2026-03", 2.0, "4.00")]
    assert april == {"A": (1.0, "6.00")}   # usage hours exclude adjustments; cost 1 h × 2.00 + 4.00

    do_close_period("2026-04", actor=finance)      # the adjustment is now booked: May has none
    may, _ = team_costs("2026-05")
    assert may == {}
    assert team_costs("2026-04")[0] == {"A": (1.0, "6.00")}


def test_removed_data_gives_a_negative_adjustment(march, finance):
    do_close_period("2026-03", actor=finance)
    UsageHour.objects.filter(hour_start__gte=utc(2026, 3, 10, 5)).delete()   # re-ingest found 5 h fewer
    _, p = team_costs("2026-04")
    [adj] = p["results"][0]["lines"]
    assert (adj["kind"], adj["allocated_gpu_hours"], adj["cost"]) == ("adjustment", -5.0, "-10.00")


def test_only_admin_reopens_and_it_is_audited(march, finance, admin_user):
    do_close_period("2026-03", actor=finance)
    with pytest.raises(NotAllowed):
        do_reopen_period("2026-03", actor=finance)
    do_reopen_period("2026-03", actor=admin_user)
    assert statement("2026-03").closed is False
    assert AuditEvent.objects.filter(action="period.reopen", actor=admin_user).count() == 1
    with pytest.raises(ActionError, match="not closed"):
        do_reopen_period("2026-03", actor=admin_user)


def test_cannot_close_twice_or_an_unfinished_month(march, finance):
    do_close_period("2026-03", actor=finance)
    with pytest.raises(ActionError, match="already closed"):
        do_close_period("2026-03", actor=finance)
    with pytest.raises(ActionError, match="has not ended"):
        do_close_period("2100-01", actor=finance)
    with pytest.raises(ActionError, match="YYYY-MM"):
        do_close_period("March", actor=finance)


def test_namespace_moves_change_open_months_only(march, finance):
    prod, ns, rate, gpu = march
    make_usage(gpu, "ml", utc(2026, 4, 20), hours=1)
    do_close_period("2026-03", actor=finance)
    with pytest.raises(ActionError, match="2026-03 is closed"):
        do_assign_namespace(ns, make_team("B"), date(2026, 3, 15), actor=finance)
    do_assign_namespace(ns, make_team("B"), date(2026, 4, 15), actor=finance)
    assert team_costs("2026-04")[0] == {"B": (1.0, "2.00")}
    assert team_costs("2026-03")[0] == {"A": (10.0, "20.00")}
    event = AuditEvent.objects.get(action="namespace.assign")
    assert event.old_value["team"] == "A" and event.new_value == {"team": "B", "effective_from": "2026-04-15"}


def test_close_period_command(march, finance):
    call_command("close_period", "2026-03", "--user", "finance")
    assert statement("2026-03").closed
    with pytest.raises(CommandError, match="already closed"):
        call_command("close_period", "2026-03")


def test_rate_changes_are_audited_old_to_new(march, admin_user):
    from apps.accounting.actions.rates import do_save_rate
    _, _, rate, _ = march
    rate.hourly_rate = Decimal("2.50")
    do_save_rate(admin_user, rate)
    event = AuditEvent.objects.get(action="rate.change")
    assert event.old_value["hourly_rate"] == "2.000000" and event.new_value["hourly_rate"] == "2.500000"
    assert Rate.objects.get().hourly_rate == Decimal("2.50")


def test_reopen_refused_while_a_later_closed_month_carries_its_adjustments(march, finance, admin_user):
    prod, ns, rate, gpu = march
    do_close_period("2026-03", actor=finance)
    make_usage(gpu, "ml", utc(2026, 3, 20), hours=1, pod="late")
    do_close_period("2026-04", actor=finance)
    with pytest.raises(ActionError, match="booked in the closed period.*2026-04"):
        do_reopen_period("2026-03", actor=admin_user)
    do_reopen_period("2026-04", actor=admin_user)      # April live again: shows the adjustment again
    _, p = team_costs("2026-04")
    assert [line["kind"] for line in p["results"][0]["lines"]] == ["adjustment"]
    do_reopen_period("2026-03", actor=admin_user)      # now allowed; March live: 11 h
    assert team_costs("2026-03")[0] == {"A": (11.0, "22.00")}
    assert team_costs("2026-04")[0] == {}


def test_a_month_before_any_history_is_refused(march, finance):
    """March is the fleet's first month (its first hour: 10 March). February and 2020-01 end
    before it: there is nothing to close, and a frozen empty statement would only hide the
    month from later corrections."""
    for period in ("2026-02", "2020-01"):
        with pytest.raises(ActionError, match=f"{period} ends before the fleet's history begins "
                                              r"\(its first ingested hour: 2026-03-10 00:00 UTC\)"):
            do_close_period(period, actor=finance)
    assert not BillingPeriod.objects.filter(closed_at__isnull=False).exists()
    assert not AuditEvent.objects.filter(action="period.close").exists()
    do_close_period("2026-03", actor=finance)          # the month holding the first hour closes


def test_a_month_with_nothing_ingested_at_all_is_refused(db, finance):
    with pytest.raises(ActionError, match="2026-02 ends before the fleet's history begins: nothing "
                                          "has been ingested yet"):
        do_close_period("2026-02", actor=finance)


def test_a_month_an_ingest_run_covered_closes_though_it_found_no_usage(march, finance):
    """January was ingested (a succeeded run over it) and had no GPUs busy or idle: it is
    history, a month of nothing, and closes with an empty statement."""
    from apps.ingest.models import IngestRun

    prod = march[0]
    IngestRun.objects.create(cluster=prod, window_start=utc(2026, 1, 1), window_end=utc(2026, 2, 1),
                             status=IngestRun.Status.FAILED)
    with pytest.raises(ActionError, match="2025-12 ends before the fleet's history begins"):
        do_close_period("2025-12", actor=finance)
    with pytest.raises(ActionError, match="2026-01 ends before"):     # a failed run is no history
        do_close_period("2026-01", actor=finance)
    IngestRun.objects.create(cluster=prod, window_start=utc(2026, 1, 1), window_end=utc(2026, 2, 1),
                             status=IngestRun.Status.SUCCEEDED)
    with pytest.raises(ActionError, match=r"2025-12 ends before the fleet's history begins \(its first "
                                          r"ingested hour: 2026-01-01 00:00 UTC\)"):
        do_close_period("2025-12", actor=finance)
    assert do_close_period("2026-01", actor=finance).lines.count() == 0


def test_a_month_before_history_is_refused_by_api_command_and_admin(march, finance, api):
    from django.test import Client

    response = api(finance).post("/api/v1/chargeback/close/", {"period": "2020-01"}, format="json")
    assert response.status_code == 409
    assert response.json() == {"detail": "2020-01 ends before the fleet's history begins (its first ingested "
                                          "hour: 2026-03-10 00:00 UTC); there is nothing to close"}
    with pytest.raises(CommandError) as refused:
        call_command("close_period", "2020-01")
    assert "\n" not in str(refused.value) and "ends before the fleet's history begins" in str(refused.value)

    admin = make_user("site-admin", "admin", superuser=True)
    admin.is_staff = True
    admin.save()
    client = Client()
    client.force_login(admin)
    bp = BillingPeriod.objects.create(period="2020-01")
    page = client.post("/admin/accounting/billingperiod/", {"action": "close_periods", "_selected_action": [bp.pk]},
                       follow=True)
    assert "2020-01: 2020-01 ends before the fleet&#x27;s history begins" in page.content.decode()
    assert not BillingPeriod.objects.get(pk=bp.pk).is_closed


def test_a_deleted_period_takes_its_statement_lines_and_frozen_days_with_it(march, finance):
    """Neither table has a database foreign key to its period (the close alone writes them, in
    the transaction holding the period's row): Django's cascade is what removes them."""
    from apps.accounting.models import FrozenDay, StatementLine

    do_close_period("2026-03", actor=finance)
    period = BillingPeriod.objects.get(period="2026-03")
    assert period.lines.count() == 1 and FrozenDay.objects.filter(period=period).count() == 1
    period.delete()
    assert StatementLine.objects.count() == 0 and FrozenDay.objects.count() == 0
