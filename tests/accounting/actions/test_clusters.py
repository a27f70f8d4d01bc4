"""Every money write is an action (docs/conventions.md, "Writes that matter"; issue 39): node pools,
a cluster's label trust and teams edited in the admin leave an audit event with old → new."""
import pytest
from django.test import Client

from apps.accounting.models import NodePool
from apps.clusters.models import Cluster
from apps.teams.models import AuditEvent, Team

from tests.support.factories import make_cluster, make_team, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def site_admin(db):
    c = Client()
    c.force_login(make_user("root", "admin", superuser=True, staff=True))
    return c


def events(action):
    return [(e.actor.username if e.actor else None, e.old_value, e.new_value)
            for e in AuditEvent.objects.filter(action=action).order_by("id")]


def test_a_node_pool_added_changed_and_deleted_in_the_admin_is_audited(site_admin):
    prod = make_cluster()
    form = {"cluster": prod.pk, "name": "spot", "host_pattern": "spot-*", "price_class": "spot", "priority": 0}
    assert site_admin.post("/admin/accounting/nodepool/add/", form).status_code == 302
    pool = NodePool.objects.get()
    assert site_admin.post(f"/admin/accounting/nodepool/{pool.pk}/change/",
                           {**form, "price_class": "reserved"}).status_code == 302
    assert site_admin.post(f"/admin/accounting/nodepool/{pool.pk}/delete/", {"post": "yes"}).status_code == 302
    spot = {"cluster_id": prod.pk, "name": "spot", "host_pattern": "spot-*", "price_class": "spot", "priority": 0}
    assert events("node_pool.create") == [("root", None, spot)]
    assert events("node_pool.change") == [("root", spot, {**spot, "price_class": "reserved"})]
    assert events("node_pool.delete") == [("root", {**spot, "price_class": "reserved"}, None)]


def test_a_clusters_label_trust_changed_in_the_admin_is_audited(site_admin):
    prod = make_cluster()
    page = site_admin.get(f"/admin/clusters/cluster/{prod.pk}/change/")
    form = page.context["adminform"].form
    data = {name: form[name].value() for name in form.fields if form[name].value() is not None}
    data = {k: ("" if v is False else "on" if v is True else v) for k, v in data.items() if v != ""}
    data.update(metric_overrides="{}", mig_slices_overrides="{}", label_trust="approve")
    response = site_admin.post(f"/admin/clusters/cluster/{prod.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert Cluster.objects.get(pk=prod.pk).label_trust == "approve"
    [(actor, old, new)] = events("cluster.change")
    assert (actor, old["label_trust"], new["label_trust"]) == ("root", "trusted", "approve")


def test_a_team_renamed_in_the_admin_is_audited(site_admin):
    team = make_team("research")
    assert site_admin.post(f"/admin/teams/team/{team.pk}/change/",
                           {"name": "ai-research", "cost_centre": "CC-7"}).status_code == 302
    assert Team.objects.get(pk=team.pk).name == "ai-research"
    assert events("team.change") == [("root", {"name": "research", "cost_centre": ""},
                                      {"name": "ai-research", "cost_centre": "CC-7"})]
