"""The admin's claims page shows only messages the portal wrote (issue 42): a decision's result
comes through the session after the redirect, and `?done=<any text>` shows nothing. Before,
the result rode in the query string, so a link with `?done=Your account is locked, call …`
showed that text as the portal's green success message."""
from datetime import datetime, timezone

import pytest

from apps.teams.models import NamespaceLabel

from tests.support.factories import make_cluster, make_namespace, make_team, make_user

pytestmark = pytest.mark.django_db
FAKE = "Payroll moved: sign in again at evil.example"


def test_the_page_does_not_echo_its_query_string(client):
    client.force_login(make_user("admin", "admin"))
    page = client.get("/admin-tools/claims/", {"done": FAKE})
    assert page.status_code == 200 and "Payroll moved" not in page.content.decode()


def test_a_decision_is_said_after_the_redirect_and_only_once(client):
    client.force_login(make_user("admin", "admin"))
    cluster = make_cluster()
    cluster.label_trust = "approve"
    cluster.save()
    namespace = make_namespace(cluster, "ml")
    NamespaceLabel.objects.create(namespace=namespace, valid_from=datetime(2026, 3, 1, tzinfo=timezone.utc),
                                  team_label="alpha")
    make_team("alpha")
    answer = client.post("/admin-tools/claims/", {"namespace": namespace.pk, "team_label": "alpha",
                                                  "action": "ignore"})
    assert answer.status_code == 302 and answer["Location"] == "/admin-tools/claims/"
    page = client.get(answer["Location"]).content.decode()
    assert "prod/ml&#x27;s claim to alpha is ignored" in page
    assert "claim to alpha is ignored" not in client.get("/admin-tools/claims/").content.decode()
