"""/api/v1/usage/ (docs/api.md), on figures ingested from hand-built series."""
import csv
import io
from datetime import date

import pytest
from rest_framework.test import APIClient

from apps.ingest.pipeline import ingest
from apps.teams.models import Namespace, NamespaceAssignment, NamespaceLabel, Team
from apps.teams.tokens import do_create_api_token

from tests.support.factories import PASSWORD, make_user
from tests.support.series import A100, H, H100, T0, dt, small_cluster_fetcher
from tests.support.factories import make_cluster

pytestmark = pytest.mark.django_db
WINDOW = {"start": "2026-10-05T10:00:00Z", "end": "2026-10-05T12:00:00Z"}


@pytest.fixture
def ingested():
    cluster = make_cluster("lab", prometheus_url="http://127.0.0.1:9")
    ingest(cluster, dt(T0), dt(T0 + 2 * H), fetcher=small_cluster_fetcher())
    return cluster


@pytest.fixture
def admin_client():
    client = APIClient()
    # a personal token: DRF's older keys are off by default (docs/api.md, "Tokens")
    key = do_create_api_token(make_user("admin", "admin"), name="tests", days=365, read_only=True)[1]
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def rows(client, **params):
    r = client.get("/api/v1/usage/", {**WINDOW, **params})
    assert r.status_code == 200, r.content
    body = r.json()
    return body, {row["key"]: row for row in body["results"]}


def test_group_by_namespace(ingested, admin_client):
    body, by_key = rows(admin_client, group_by="namespace")
    assert body["start"] == "2026-10-05T10:00:00Z" and body["group_by"] == "namespace"
    assert set(by_key) == {"ml", "serve"}
    ml = by_key["ml"]
    assert ml["allocated_gpu_hours"] == pytest.approx(2.0)
    assert ml["used_gpu_hours"] == pytest.approx(0.9)       # 1 h at 90 %, 1 h at 0 %
    assert ml["idle_gpu_hours"] == pytest.approx(1.0)
    assert ml["efficiency"] == pytest.approx(0.45)
    assert "unallocated_gpu_hours" not in ml
    serve = by_key["serve"]
    assert serve["allocated_gpu_hours"] == pytest.approx(2 / 7, abs=1e-6)
    assert serve["mig_instance_hours"] == {"1g.10gb": pytest.approx(2.0)}
    assert serve["efficiency"] == pytest.approx(0.4)
    # no rate card: nothing is priced, and the hours say so rather than a cost of 0
    assert (ml["cost"], ml["currency"], ml["unpriced_gpu_hours"]) == (None, None, pytest.approx(2.0))


def test_group_by_cluster_and_model_carry_unallocated(ingested, admin_client):
    _, by_cluster = rows(admin_client, group_by="cluster")
    lab = by_cluster["lab"]
    assert lab["allocated_gpu_hours"] == pytest.approx(2 + 2 / 7, abs=1e-6)
    # the free H100's 2 h, and the six slices of the A100 no MIG instance occupies: 2 h × 6/7
    # (docs/accounting.md, "When devices change")
    assert lab["unallocated_gpu_hours"] == pytest.approx(2.0 + 12 / 7, abs=1e-6)
    _, by_model = rows(admin_client, group_by="gpu_model")
    assert by_model[H100]["allocated_gpu_hours"] == pytest.approx(2.0)
    assert by_model[H100]["unallocated_gpu_hours"] == pytest.approx(2.0)
    assert by_model[A100]["allocated_gpu_hours"] == pytest.approx(2 / 7, abs=1e-6)
    assert by_model[A100]["unallocated_gpu_hours"] == pytest.approx(12 / 7, abs=1e-6)


def test_group_by_team_uses_labels_dated_mappings_and_unassigned(ingested, admin_client):
    _, by_team = rows(admin_client, group_by="team")
    assert set(by_team) == {"research", "search"}
    NamespaceLabel.objects.filter(namespace__name="serve").update(team_label="")     # the label removed
    _, by_team = rows(admin_client, group_by="team")
    assert by_team["unassigned"]["allocated_gpu_hours"] == pytest.approx(2 / 7, abs=1e-6)
    platform = Team.objects.get_or_create(name="platform")[0]
    NamespaceAssignment.objects.create(namespace=Namespace.objects.get(name="ml"), team=platform,
                                       effective_from=date(2026, 10, 5))
    _, by_team = rows(admin_client, group_by="team")
    assert by_team["platform"]["allocated_gpu_hours"] == pytest.approx(2.0)
    assert "research" not in by_team
    # a mapping dated after the window does not rewrite it
    NamespaceAssignment.objects.filter(team=platform).update(effective_from=date(2026, 10, 6))
    _, by_team = rows(admin_client, group_by="team")
    assert "platform" not in by_team and by_team["research"]["allocated_gpu_hours"] == pytest.approx(2.0)


def test_window_is_half_open_on_hours(ingested, admin_client):
    _, by_key = rows(admin_client, group_by="namespace", start="2026-10-05T11:00:00Z", end="2026-10-05T12:00:00Z")
    assert by_key["ml"]["allocated_gpu_hours"] == pytest.approx(1.0)
    assert by_key["ml"]["idle_gpu_hours"] == pytest.approx(1.0)


def test_cluster_filter_and_unknown_cluster(ingested, admin_client):
    _, by_key = rows(admin_client, group_by="namespace", cluster="lab")
    assert "ml" in by_key
    r = admin_client.get("/api/v1/usage/", {**WINDOW, "group_by": "namespace", "cluster": "nope"})
    assert r.status_code == 404 and "nope" in r.json()["detail"]


@pytest.mark.parametrize("params,needle", [
    ({"group_by": "pod"}, "group_by"),
    ({"group_by": "team", "start": "yesterday"}, "start"),
    ({"group_by": "team", "start": "2026-10-06", "end": "2026-10-05"}, "after"),
    ({"group_by": "team", "start": "2020-01-01", "end": "2026-01-01"}, "limit"),
])
def test_bad_parameters_get_a_clear_400(ingested, admin_client, params, needle):
    r = admin_client.get("/api/v1/usage/", params)
    assert r.status_code == 400
    assert needle in str(r.json())


def test_csv_has_the_same_rows(ingested, admin_client):
    r = admin_client.get("/api/v1/usage/", {**WINDOW, "group_by": "namespace", "format": "csv"})
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(r.content.decode())))
    assert [row["key"] for row in table] == ["ml", "serve"]
    assert float(table[0]["allocated_gpu_hours"]) == pytest.approx(2.0)
    assert float(table[1]["mig_instance_hours.1g.10gb"]) == pytest.approx(2.0)
    r = admin_client.get("/api/v1/usage/", {**WINDOW, "group_by": "namespace"}, HTTP_ACCEPT="text/csv")
    assert r.content.decode().splitlines()[0].startswith("key,allocated_gpu_hours")


def test_csv_escapes_formula_cells(ingested, admin_client):
    NamespaceLabel.objects.filter(namespace__name="ml").update(team_label="=HYPERLINK(\"http://evil\")")
    r = admin_client.get("/api/v1/usage/", {**WINDOW, "group_by": "team", "format": "csv"})
    assert "'=HYPERLINK" in r.content.decode()


def test_anonymous_is_refused(ingested):
    r = APIClient().get("/api/v1/usage/", {**WINDOW, "group_by": "namespace"})
    assert r.status_code in (401, 403)


def test_session_auth_works(ingested, client):
    make_user("finance", "finance")
    # through the sign-in form, as a browser does (the form is what sign-in throttling guards)
    assert client.post("/accounts/login/", {"username": "finance", "password": PASSWORD}).status_code == 302
    assert client.get("/api/v1/usage/", {**WINDOW, "group_by": "team"}).status_code == 200


def test_team_lead_sees_only_own_teams_namespaces(ingested):
    lead = make_user("team_lead", "team_lead")
    Team.objects.get_or_create(name="search")[0].members.add(lead)
    client = APIClient()
    client.force_authenticate(lead)
    for group_by in ("namespace", "team", "cluster", "gpu_model"):
        _, by_key = rows(client, group_by=group_by)
        total = sum(r["allocated_gpu_hours"] for r in by_key.values())
        assert total == pytest.approx(2 / 7, abs=1e-6), group_by
        # capacity no pod held is nobody's: a lead's rows leave the fleet field out (it was 0.0)
        assert all("unallocated_gpu_hours" not in r for r in by_key.values()), group_by
    _, by_key = rows(client, group_by="namespace")
    assert set(by_key) == {"serve"}


def test_viewer_gets_no_money(ingested):
    client = APIClient()
    client.force_authenticate(make_user("viewer", "viewer"))
    _, by_key = rows(client, group_by="namespace")
    assert by_key["ml"]["cost"] is None and by_key["ml"]["currency"] is None


def test_schema_is_openapi3(admin_client):
    r = admin_client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert r.status_code == 200
    doc = r.json()
    assert doc["openapi"].startswith("3.") and "/api/v1/usage/" in doc["paths"]
