"""Corrections as of their month (docs/accounting.md, "Late data for a closed month"; issue 39):
late hours of a closed month are priced and attributed as that month's configuration gave them
at its close, and a credit for vanished hours refunds exactly what was billed, in the billed
currency, whatever the rate card, the node pools or a cluster's label trust say today."""
from datetime import date
from decimal import Decimal

import pytest
from django.db import connection

from apps.accounting.actions.periods import do_close_period
from apps.accounting.actions.rates import do_save_rate
from apps.accounting.models import Rate, UsageHour
from apps.accounting.ledger.statements import statement
from apps.clusters.models import Cluster
from apps.reports.statement_rows import statement_payload

from tests.support.factories import make_cluster, make_device, make_namespace, make_pool, make_rate, make_team, \
    make_usage, utc

pytestmark = pytest.mark.django_db


def adjustments(period):
    """(team, price class, hours, cost, currency) of each adjustment line of the month."""
    p = statement_payload(statement(period), "team", None)
    return [(row["key"], line["price_class"], line["allocated_gpu_hours"], line["cost"], line["currency"])
            for row in p["results"] for line in row["lines"] if line["kind"] == "adjustment"]


@pytest.fixture
def march(finance):
    """research's namespace ml held one H100 on gpu-1 for 10 h on 10 March at 2.00 USD on demand:
    March closed at 10 h × 2.00 = 20.00 USD."""
    prod = make_cluster()
    make_namespace(prod, "ml", "research")
    rate = make_rate(hourly_rate="2.00")
    gpu = make_device(prod, host="gpu-1")
    make_usage(gpu, "ml", utc(2026, 3, 10), hours=10)
    do_close_period("2026-03", actor=finance)
    return prod, gpu, rate


def lose_two_hours():
    """A re-ingest finds 2 of the 10 hours no more (08:00 and 09:00)."""
    UsageHour.objects.filter(hour_start__gte=utc(2026, 3, 10, 8), hour_start__lt=utc(2026, 3, 11)).delete()


CREDIT = [("research", "on_demand", -2.0, "-4.00", "USD")]      # −2 h × 2.00 USD, what was billed


def test_a_credit_refunds_what_was_billed(march):
    lose_two_hours()
    assert adjustments("2026-04") == CREDIT


def test_a_rate_edited_after_the_close_changes_no_credit(march, admin_user):
    _prod, _gpu, rate = march
    lose_two_hours()
    rate.hourly_rate = Decimal("5.00")
    do_save_rate(admin_user, rate)
    assert adjustments("2026-04") == CREDIT          # not −2 × 5.00 = −10.00


def test_a_backdated_rate_changes_no_credit(march, admin_user):
    lose_two_hours()
    do_save_rate(admin_user, Rate(gpu_model="NVIDIA H100 80GB HBM3", mig_profile="", price_class="on_demand",
                                  hourly_rate=Decimal("5.00"), currency="USD", effective_from=date(2026, 3, 1)))
    assert adjustments("2026-04") == CREDIT


def test_a_currency_change_refunds_in_the_billed_currency(march, admin_user):
    _prod, _gpu, rate = march
    lose_two_hours()
    rate.currency = "EUR"
    do_save_rate(admin_user, rate)
    assert adjustments("2026-04") == CREDIT          # not −4.00 EUR against a USD bill


def test_a_deleted_rate_still_refunds(march, admin_user):
    _prod, _gpu, rate = march
    lose_two_hours()
    with connection.cursor() as cur:                   # past every guard: the action and the admin refuse it
        cur.execute(f"DELETE FROM {Rate._meta.db_table} WHERE id = %s", [rate.pk])
    assert adjustments("2026-04") == CREDIT          # not an unpriced line refunding nothing


def test_late_hours_are_priced_at_the_card_the_month_was_closed_with(march, admin_user):
    """A 9.00 rate backdated to 5 March after the close: March's 2 late hours are still 2 × 2.00."""
    _prod, gpu, _rate = march
    do_save_rate(admin_user, Rate(gpu_model="NVIDIA H100 80GB HBM3", mig_profile="", price_class="on_demand",
                                  hourly_rate=Decimal("9.00"), currency="USD", effective_from=date(2026, 3, 5)))
    make_usage(gpu, "ml", utc(2026, 3, 10, 10), hours=2, pod="late")
    assert adjustments("2026-04") == [("research", "on_demand", 2.0, "4.00", "USD")]


def test_late_hours_on_a_new_day_follow_the_pools_of_the_close(march):
    """A node pool added after the close puts gpu-1 in the spot class (0.90); 2 late hours of
    12 March, a day the close never saw, are March's usage: on demand, 2 × 2.00."""
    prod, gpu, _rate = march
    make_rate(hourly_rate="0.90", price_class="spot")
    make_pool(prod, "gpu-*", "spot")
    make_usage(gpu, "ml", utc(2026, 3, 12), hours=2, pod="late")
    assert adjustments("2026-04") == [("research", "on_demand", 2.0, "4.00", "USD")]


def test_late_hours_follow_the_label_trust_of_the_close(finance):
    """cv is labelled vision on a trusted cluster; March closed (3 h on 15 March at 1.00 = 3.00).
    The cluster is switched to approve after the close, and 2 late hours arrive on 16 March: they
    are vision's, as March's trust said, not unassigned."""
    prod = make_cluster()
    make_team("vision")
    make_namespace(prod, "cv", label_team="vision")
    make_rate(hourly_rate="1.00")
    gpu = make_device(prod)
    make_usage(gpu, "cv", utc(2026, 3, 15), hours=3)
    do_close_period("2026-03", actor=finance)
    cluster = Cluster.objects.get(pk=prod.pk)
    cluster.label_trust = Cluster.LabelTrust.APPROVE
    cluster.save()
    make_usage(gpu, "cv", utc(2026, 3, 16), hours=2, pod="late")
    assert adjustments("2026-04") == [("vision", "on_demand", 2.0, "2.00", "USD")]


def test_late_hours_follow_a_renamed_team(march, admin_user):
    """research is renamed ai-research after March's close; 3 late hours of 10 March are booked
    to ai-research (the same team), not to research, a name no team has any more."""
    from apps.teams.audit import do_save_team
    from apps.teams.models import Team

    _prod, gpu, _rate = march
    team = Team.objects.get(name="research")
    team.name = "ai-research"
    do_save_team(admin_user, team)
    make_usage(gpu, "ml", utc(2026, 3, 10, 10), hours=3, pod="late")
    assert adjustments("2026-04") == [("ai-research", "on_demand", 3.0, "6.00", "USD")]


# ---------------------------------------------------------------- the label history of the close

@pytest.fixture
def labelled_march(finance):
    """cv is labelled vision (kube_namespace_labels) on a trusted cluster: 3 h on 15 March at 1.00
    USD, March closed at 3.00 billed to vision."""
    prod = make_cluster()
    make_team("vision"), make_team("nlp")
    cv = make_namespace(prod, "cv", label_team="vision")
    make_rate(hourly_rate="1.00")
    gpu = make_device(prod)
    make_usage(gpu, "cv", utc(2026, 3, 15), hours=3)
    do_close_period("2026-03", actor=finance)
    return prod, cv, gpu


def test_a_label_history_rewritten_after_the_close_moves_no_correction(labelled_march):
    """After the close a re-ingest rewrites cv's label history: nlp for all of March. 2 late hours
    arrive on 16 March, a day the close never saw: they are vision's, as the label history said at
    the close (2 × 1.00 = 2.00), not nlp's."""
    from tests.support.factories import label_namespace

    _prod, cv, gpu = labelled_march
    label_namespace(cv, "nlp", since=utc(2026, 3, 1))
    make_usage(gpu, "cv", utc(2026, 3, 16), hours=2, pod="late")
    assert adjustments("2026-04") == [("vision", "on_demand", 2.0, "2.00", "USD")]


def test_a_label_change_through_ingest_after_the_close_moves_no_correction(labelled_march):
    """The same through ingest's own write of the label history (apps/teams/labels.py): it saw nlp
    on cv for every hour of 14–16 March; its rows are dated after the close, so March's late hours
    (2 h on 16 March) are still vision's. April's own hours follow the new label."""
    from datetime import timedelta

    from apps.teams.labels import LabelsSeen, record_labels_seen
    from apps.teams.models import NamespaceLabel

    prod, cv, gpu = labelled_march
    hours = [(utc(2026, 3, 14) + timedelta(hours=i), "nlp") for i in range(72)]
    record_labels_seen(prod, {"cv": LabelsSeen(hours, utc(2026, 3, 17))})
    assert NamespaceLabel.history.filter(team_label="nlp", history_type="+").exists()   # dated
    make_usage(gpu, "cv", utc(2026, 3, 16), hours=2, pod="late")
    make_usage(gpu, "cv", utc(2026, 4, 2), hours=1)
    assert adjustments("2026-04") == [("vision", "on_demand", 2.0, "2.00", "USD")]
    p = statement_payload(statement("2026-04"), "team", None)
    assert {row["key"]: row["cost"] for row in p["results"]} == {"nlp": "1.00", "vision": "2.00"}


def test_labels_ingested_after_the_close_for_hours_past_its_watermark_count(finance):
    """March was closed while ingest had reached only 20 March 00:00 (its recorded watermark).
    Hours after it arrive late with their labels: cv became nlp from 25 March. The late hours of
    26 March are nlp's (the labels that came with them), those of 16 March vision's (the history
    the close read for the hours it had)."""
    from datetime import timedelta

    from apps.accounting.models import BillingPeriod
    from apps.teams.labels import LabelsSeen, record_labels_seen

    prod = make_cluster()
    make_team("vision"), make_team("nlp")
    make_namespace(prod, "cv", label_team="vision")
    make_rate(hourly_rate="1.00")
    gpu = make_device(prod)
    make_usage(gpu, "cv", utc(2026, 3, 15), hours=3)
    Cluster.objects.filter(pk=prod.pk).update(ingested_until=utc(2026, 3, 20))
    do_close_period("2026-03", actor=finance)
    assert BillingPeriod.objects.get(period="2026-03").watermarks == {"prod": "2026-03-20T00:00:00+00:00"}
    hours = [(utc(2026, 3, 14) + timedelta(hours=i), "vision") for i in range(24 * 11)]
    hours += [(utc(2026, 3, 25) + timedelta(hours=i), "nlp") for i in range(24 * 2)]
    record_labels_seen(prod, {"cv": LabelsSeen(hours, utc(2026, 3, 27))})
    make_usage(gpu, "cv", utc(2026, 3, 16), hours=2, pod="late")
    make_usage(gpu, "cv", utc(2026, 3, 26), hours=4, pod="later")
    assert sorted(adjustments("2026-04")) == [("nlp", "on_demand", 4.0, "4.00", "USD"),
                                              ("vision", "on_demand", 2.0, "2.00", "USD")]
