"""History cannot be deleted from under a statement (docs/chargeback.md, "History stays"; issue
39): a cluster, a team or a rate that priced a closed month is not deleted — the admin, the API
and the model refuse it with the reason — and a cluster whose rows are gone anyway never credits
its closed months. An archived cluster is no longer ingested nor offered in the pickers."""
from datetime import date

import pytest
from django.db import transaction
from django.db.models import ProtectedError
from django.db.models.signals import pre_delete
from django.test import Client

from apps.accounting.actions.periods import do_close_period
from apps.accounting.models import Rate
from apps.accounting.usage.team_mapping import cluster_names
from apps.accounting.ledger.statements import statement
from apps.clusters.models import Cluster
from apps.reports.statement_rows import statement_payload
from apps.teams.models import Team

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_team, make_usage, \
    make_user, utc

pytestmark = pytest.mark.django_db


def by_team(period):
    p = statement_payload(statement(period), "team", None)
    return {row["key"]: (row["cost"], row["adjustments"]) for row in p["results"]}, p["totals_by_currency"]


@pytest.fixture
def autumn(finance):
    """research's ml on one H100 at 2.00: September 110 h (220.00) and October 50 h (100.00)
    closed, November 20 h (40.00) open."""
    prod = make_cluster()
    make_team("research")
    make_namespace(prod, "ml", label_team="research")
    rate = make_rate(hourly_rate="2.00")
    gpu = make_device(prod)
    make_usage(gpu, "ml", utc(2026, 9, 1), hours=110)
    make_usage(gpu, "ml", utc(2026, 10, 1), hours=50)
    make_usage(gpu, "ml", utc(2026, 11, 1), hours=20)
    do_close_period("2026-09", actor=finance)
    do_close_period("2026-10", actor=finance)
    return prod, rate


NOVEMBER = ({"research": ("40.00", "0.00")}, {"USD": "40.00"})


@pytest.fixture
def site_admin(db):
    c = Client()
    c.force_login(make_user("root", "admin", superuser=True, staff=True))
    return c


def test_a_cluster_that_priced_closed_months_is_not_deleted(autumn):
    prod, _rate = autumn
    assert by_team("2026-11") == NOVEMBER
    with pytest.raises(ProtectedError, match=r"priced the closed month\(s\) 2026-09, 2026-10.*archive it instead"), \
            transaction.atomic():
        prod.delete()
    assert Cluster.objects.filter(pk=prod.pk).exists()
    assert by_team("2026-11") == NOVEMBER          # not −280.00, research −300.00 of adjustments


def test_the_admin_says_why_and_deletes_nothing(autumn, site_admin):
    prod, _rate = autumn
    page = site_admin.get(f"/admin/clusters/cluster/{prod.pk}/delete/").content.decode()
    assert "priced the closed month(s) 2026-09, 2026-10" in page and "archive it instead" in page
    site_admin.post(f"/admin/clusters/cluster/{prod.pk}/delete/", {"post": "yes"})
    site_admin.post("/admin/clusters/cluster/", {"action": "delete_selected", "_selected_action": [prod.pk],
                                                 "post": "yes"})
    assert Cluster.objects.filter(pk=prod.pk).exists()
    team = Team.objects.get(name="research")
    page = site_admin.get(f"/admin/teams/team/{team.pk}/delete/").content.decode()
    assert "priced the closed month(s) 2026-09, 2026-10" in page
    site_admin.post(f"/admin/teams/team/{team.pk}/delete/", {"post": "yes"})
    assert Team.objects.filter(pk=team.pk).exists()


def test_a_cluster_deleted_past_the_guard_credits_nothing(autumn):
    """Its rows gone (a database edit past every guard), the closed months are not credited:
    their hours did not vanish, their cluster was deleted."""
    prod, _rate = autumn
    pre_delete.disconnect(sender=Cluster, dispatch_uid="web.deletes.guard.clusters.Cluster")
    try:
        prod.delete()
    finally:
        from apps.web.deletes import guard
        guard(Cluster)
    assert by_team("2026-11") == ({}, {})              # November's own hours went with it; no −300.00


def test_a_team_that_priced_a_closed_month_is_not_deleted(autumn):
    with pytest.raises(ProtectedError, match="team research priced the closed month"), transaction.atomic():
        Team.objects.get(name="research").delete()


def test_a_rate_that_priced_a_closed_month_is_refused_by_the_api(autumn, admin_user, api):
    _prod, rate = autumn
    response = api(admin_user).delete(f"/api/v1/rates/{rate.pk}/")
    assert response.status_code == 409
    assert "priced the closed month(s) 2026-09, 2026-10" in response.json()["detail"]
    assert Rate.objects.filter(pk=rate.pk).exists()
    later = make_rate(hourly_rate="3.00", effective_from=date(2026, 12, 1))     # never priced a closed month
    assert api(admin_user).delete(f"/api/v1/rates/{later.pk}/").status_code == 204


def test_an_archived_cluster_leaves_the_pickers_and_ingest(autumn):
    from django.core.management import CommandError, call_command

    prod, _rate = autumn
    make_cluster("lab")
    prod.archived = True
    prod.save()
    assert cluster_names() == ["lab"]
    for command in ("ingest", "backfill"):
        with pytest.raises(CommandError, match="cluster 'prod' is archived: it is no longer ingested"):
            call_command(command, "--cluster", "prod", "--start", "2026-11-01", "--end", "2026-11-02")
    assert by_team("2026-11") == NOVEMBER           # its history stays
