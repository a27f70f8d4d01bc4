"""Namespace moves made in the admin go through do_assign_namespace: audited, closed months refused."""
from datetime import date, datetime, timezone

import pytest
from django.contrib.auth.models import User

from apps.accounting.models import BillingPeriod
from apps.teams.models import AuditEvent, Namespace, NamespaceAssignment, Team
from tests.support.factories import make_cluster

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(client):
    admin = User.objects.create_superuser("admin", password="pw")
    client.force_login(admin)
    cluster = make_cluster("c1", prometheus_url="http://127.0.0.1:9")
    ns = Namespace.objects.create(cluster=cluster, name="ml")
    return client, ns, Team.objects.create(name="research")


def test_admin_move_is_audited(setup):
    client, ns, team = setup
    r = client.post("/admin/teams/namespaceassignment/add/",
                    {"namespace": ns.pk, "team": team.pk, "effective_from": "2026-10-01"})
    assert r.status_code == 302
    assert NamespaceAssignment.objects.get().team == team
    assert AuditEvent.objects.filter(action="namespace.assign", target__contains="ml").exists()


def test_admin_move_into_a_closed_month_is_refused(setup):
    client, ns, team = setup
    BillingPeriod.objects.create(period="2026-10", closed_at=datetime(2026, 11, 2, tzinfo=timezone.utc))
    r = client.post("/admin/teams/namespaceassignment/add/",
                    {"namespace": ns.pk, "team": team.pk, "effective_from": "2026-10-15"}, follow=True)
    assert not NamespaceAssignment.objects.exists()
    assert "2026-10 is closed" in r.content.decode()
    assert date(2026, 11, 1).isoformat() in r.content.decode()
