"""Who changed what: rates, node pools, clusters, teams, assignments and claim decisions keep
every change with its user and time (django-simple-history), the admin shows it, and a closed
month names the rate-card version it was priced with."""
from datetime import date
from decimal import Decimal

import pytest
from django.contrib.auth.models import User

from apps.accounting.actions.periods import do_close_period
from apps.accounting.models import NodePool, Rate
from apps.accounting.ledger.statements import statement
from apps.reports.statement_rows import statement_payload
from apps.teams.models import Team

from tests.support.factories import make_cluster, make_device, make_usage, utc

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    user = User.objects.create_superuser("root", password="root-correct-horse")
    client.force_login(user)
    return client, user


def test_a_rate_edited_in_the_admin_keeps_its_history_with_the_user(admin_client):
    client, user = admin_client
    rate = Rate.objects.create(gpu_model="NVIDIA H100 80GB HBM3", hourly_rate=Decimal("2.00"), currency="USD",
                               effective_from=date(2026, 1, 1))
    form = {"gpu_model": rate.gpu_model, "mig_profile": "", "price_class": "on_demand", "hourly_rate": "2.50",
            "currency": "USD", "effective_from": "2026-01-01"}
    response = client.post(f"/admin/accounting/rate/{rate.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:1500]
    changes = list(rate.history.order_by("history_id").values_list("hourly_rate", "history_type", "history_user"))
    assert changes == [(Decimal("2.000000"), "+", None), (Decimal("2.500000"), "~", user.pk)]
    page = client.get(f"/admin/accounting/rate/{rate.pk}/history/")
    assert page.status_code == 200 and b"root" in page.content


def test_pools_clusters_and_teams_keep_history_but_not_ingest_bookkeeping():
    cluster = make_cluster("lab", prometheus_url="http://prometheus:9090")
    cluster.detected_label_spelling = "plain"
    cluster.save(update_fields=["detected_label_spelling"])      # ingest's own bookkeeping: no row
    cluster.label_trust = "approve"
    cluster.save()                                               # a configuration change: a row
    assert list(cluster.history.order_by("history_id").values_list("history_type", "label_trust")) == [
        ("+", "trusted"), ("~", "approve")]
    assert "bearer_token" not in {f.name for f in cluster.history.model._meta.fields}
    pool = NodePool.objects.create(cluster=cluster, name="spot", host_pattern="spot-*", price_class="spot")
    pool.delete()
    assert list(NodePool.history.values_list("history_type", flat=True).order_by("history_id")) == ["+", "-"]
    team = Team.objects.create(name="vision")
    team.cost_centre = "CC-7"
    team.save()
    assert team.history.count() == 2


def test_a_closed_month_names_the_rate_card_version_it_used(admin_client):
    _, user = admin_client
    Rate.objects.create(gpu_model="NVIDIA H100 80GB HBM3", hourly_rate=Decimal("2.00"), currency="USD",
                        effective_from=date(2026, 1, 1))
    rate = Rate.objects.create(gpu_model="NVIDIA A100-SXM4-80GB", hourly_rate=Decimal("1.40"), currency="USD",
                               effective_from=date(2026, 1, 1))
    version = Rate.history.latest("history_id").history_id
    make_usage(make_device(make_cluster()), "", utc(2026, 9, 1))    # the fleet's history begins
    do_close_period("2026-09", actor=user)
    rate.hourly_rate = Decimal("1.60")
    rate.save()                                                   # a change after the close
    closed = statement_payload(statement("2026-09"), "team", None)
    assert closed["rate_card"]["version"] == version
    current = statement_payload(statement("2026-10"), "team", None)
    assert current["rate_card"]["version"] == version + 1
