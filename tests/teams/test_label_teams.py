"""A team known only from namespace labels is a real team (#14 P1): ingest makes its Team row
when it first sees the label value, so it is listed, pickable, has its page, and a lead the
admin links to it sees it. Before this, such a team had no page (404) and no place in the picker.
The cluster's label trust decides which values may: all on `trusted` (the default), approved
claims on `approve`, none on `known_teams` (docs/teams-and-relabels.md).

The small cluster of tests/support/series.py: namespace `ml` is labelled team=research and
`serve` team=search; no Team row exists before the ingest.
"""
import re

import pytest

from apps.clusters.models import Cluster
from apps.ingest.pipeline import ingest
from apps.teams.claims import do_decide_claim
from apps.teams.labels import TEAM_FROM_LABEL, ensure_label_teams
from apps.teams.models import AuditEvent, Namespace, Team
from tests.support.factories import make_user
from tests.support.series import H, T0, dt, small_cluster_fetcher
from tests.support.factories import make_cluster

pytestmark = pytest.mark.django_db

WINDOW = "start=2026-10-05&end=2026-10-06"


def picker_teams(body):
    select = re.search(r'<select name="team">(.*?)</select>', body, re.S).group(1)
    return re.findall(r'<option value="([^"]*)"', select)[1:]     # the first is "all teams"


def test_ingest_makes_every_label_value_a_team_with_page_and_picker_entry(client):
    cluster = make_cluster("lab", prometheus_url="http://127.0.0.1:9")
    assert not Team.objects.exists()
    ingest(cluster, dt(T0), dt(T0 + 2 * H), fetcher=small_cluster_fetcher())

    assert set(Team.objects.values_list("name", flat=True)) == {"research", "search"}
    audit = AuditEvent.objects.filter(action=TEAM_FROM_LABEL)
    assert sorted(audit.values_list("target", flat=True)) == ["research", "search"]
    assert all(e.new_value["cluster"] == "lab" for e in audit)

    client.force_login(make_user("finance", "finance"))
    body = client.get(f"/?{WINDOW}").content.decode()
    assert picker_teams(body) == ["research", "search", "unassigned"]
    page = client.get(f"/teams/research/?{WINDOW}")
    assert page.status_code == 200
    # ml/train held one H100 for the two hours: 2.00 GPU-hours on research's page
    assert re.search(r"<td>ml</td><td class=\"num\">2\.00</td>", page.content.decode())

    # Once an admin links a lead, the lead is scoped to it: its page, and only it in the picker.
    lead = make_user("lead", "team_lead")
    Team.objects.get(name="search").members.add(lead)
    client.force_login(lead)
    assert client.get(f"/teams/search/?{WINDOW}").status_code == 200
    assert client.get(f"/teams/research/?{WINDOW}").status_code == 403
    assert picker_teams(client.get(f"/?{WINDOW}").content.decode()) == ["search"]


def test_a_second_ingest_adds_no_team_and_no_audit_row():
    cluster = make_cluster("lab", prometheus_url="http://127.0.0.1:9")
    ingest(cluster, dt(T0), dt(T0 + 2 * H), fetcher=small_cluster_fetcher())
    ingest(cluster, dt(T0), dt(T0 + 2 * H), fetcher=small_cluster_fetcher())
    assert Team.objects.count() == 2
    assert AuditEvent.objects.filter(action=TEAM_FROM_LABEL).count() == 2


def test_ensure_label_teams_skips_no_label_unassigned_and_names_too_long():
    cluster = make_cluster("lab", prometheus_url="http://127.0.0.1:9")
    Team.objects.create(name="vision")
    created = ensure_label_teams(["vision", "nlp", "", "unassigned", "x" * 101, "nlp"], cluster)
    assert created == ["nlp"]
    assert sorted(Team.objects.values_list("name", flat=True)) == ["nlp", "vision"]
    assert ensure_label_teams(["nlp", "vision"], cluster) == []


def test_no_team_from_labels_where_an_admin_decides_the_teams():
    for trust in (Cluster.LabelTrust.KNOWN_TEAMS, Cluster.LabelTrust.APPROVE):
        cluster = make_cluster(f"lab-{trust}", prometheus_url="http://127.0.0.1:9", label_trust=trust)
        ingest(cluster, dt(T0), dt(T0 + 2 * H), fetcher=small_cluster_fetcher())
    assert not Team.objects.exists()
    # Approving serve's claim on the `approve` cluster makes `search` a team; research stays a claim.
    serve = Namespace.objects.get(cluster__name="lab-approve", name="serve")
    do_decide_claim(serve, "search", "approved", dt(T0))
    assert list(Team.objects.values_list("name", flat=True)) == ["search"]
    ml = Namespace.objects.get(cluster__name="lab-approve", name="ml")
    do_decide_claim(ml, "research", "ignored", dt(T0))
    assert list(Team.objects.values_list("name", flat=True)) == ["search"]
