"""The /chargeback/ page: per-team statement, drill-down, close with a confirmation step."""
import pytest
from django.test import Client

from apps.accounting.ledger.statements import statement

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_team, make_usage, utc

pytestmark = pytest.mark.django_db


@pytest.fixture
def month(team_lead):
    prod = make_cluster()
    make_team("A", lead=team_lead)
    make_namespace(prod, "ml", "A")
    make_namespace(prod, "cv", "B")
    make_rate(hourly_rate="2.00")
    make_usage(make_device(prod), "ml", utc(2026, 3, 1), hours=3)   # A 6.00
    make_usage(make_device(prod), "cv", utc(2026, 3, 1), hours=1)   # B 2.00


def client_for(user, csrf=False):
    c = Client(enforce_csrf_checks=csrf)
    c.force_login(user)
    return c


@pytest.mark.postgres   # the query counts assume the stored month answers
def test_finance_sees_teams_drills_down_and_closes(month, finance, django_assert_max_num_queries):
    c = client_for(finance, csrf=True)
    # The first view computes the month's answer and stores it (docs/performance.md: its 31 day
    # parts in a few statements, then the span cells and lines merged from them); a view while
    # nothing changed reads the stored lines back. Beside them the first view reads the rate
    # card's version history (the card a month is closed with), the fleet's first succeeded
    # ingest (no Close before the history) and its first hour (only months of the history are
    # stored: asked by each of the three parts this page stores, as the page reads no version once).
    with django_assert_max_num_queries(43):
        c.get("/chargeback/", {"period": "2026-03", "team": "A"})
    with django_assert_max_num_queries(11):
        page = c.get("/chargeback/", {"period": "2026-03", "team": "A"})
    html = page.content.decode()
    assert page.status_code == 200 and "badge open" in html
    assert "$6.00" in html and "$2.00" in html and "$8.00" in html   # A, B, total (MONEY_LOCALE en_US)
    assert "$2.00/h" in html                                         # A's line, drilled down
    assert "format=csv" in html and "/chargeback/close/?period=2026-03" in html
    assert "/api/v1/chargeback/xlsx/?period=2026-03" in html and "Download statement (XLSX)" in html

    confirm = c.get("/chargeback/close/", {"period": "2026-03"})
    assert b"Yes, close 2026-03" in confirm.content and b"csrfmiddlewaretoken" in confirm.content
    assert not statement("2026-03").closed
    assert c.post("/chargeback/close/", {"period": "2026-03"}).status_code == 403   # no CSRF token
    token = confirm.cookies["csrftoken"].value
    done = c.post("/chargeback/close/", {"period": "2026-03", "csrfmiddlewaretoken": token})
    assert done.status_code == 302 and statement("2026-03").closed
    after = c.get(done["Location"]).content.decode()
    assert "badge closed" in after and "is closed" in after and "Close 2026-03" not in after


def test_team_lead_sees_own_team_and_cannot_close(month, team_lead):
    c = client_for(team_lead)
    html = c.get("/chargeback/", {"period": "2026-03"}).content.decode()
    assert "$6.00" in html and ">B<" not in html and "Close 2026-03" not in html
    assert c.post("/chargeback/close/", {"period": "2026-03"}).status_code == 403


def test_viewer_and_anonymous(month, viewer):
    assert client_for(viewer).get("/chargeback/").status_code == 403
    anonymous = Client().get("/chargeback/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


def test_bad_period_is_explained(month, finance):
    response = client_for(finance).get("/chargeback/", {"period": "2026-3"})
    assert response.status_code == 400 and "is not a month like 2026-03" in response.content.decode()


def test_bad_shared_idle_is_refused_as_the_api_refuses_it(month, finance):
    """The page and the API parse the query string alike (docs/conventions.md, "A query string is
    parsed once"): an unknown `shared_idle` is a 400 naming it on both, not a silent default."""
    page = client_for(finance).get("/chargeback/", {"period": "2026-03", "shared_idle": "evenly"})
    api = client_for(finance).get("/api/v1/chargeback/", {"period": "2026-03", "shared_idle": "evenly"})
    assert page.status_code == 400 and "shared_idle" in page.content.decode()
    assert api.status_code == 400 and "shared_idle" in api.content.decode()


def test_default_month_is_the_last_one_with_usage_or_this_one(client, django_user_model):
    """A portal in its first month opens on the month to date, not on an empty last month."""
    from datetime import datetime, timedelta, timezone

    from apps.accounting.models import UsageHour
    from apps.clusters.models import Device
    from apps.accounting.ledger.statements import default_period

    now = datetime.now(timezone.utc)
    this_month = f"{now:%Y-%m}"
    last = now.replace(day=1) - timedelta(days=1)
    assert default_period() == this_month
    cluster = make_cluster("dflt", prometheus_url="http://127.0.0.1:9")
    device = Device.objects.create(cluster=cluster, uuid="GPU-d", model_name="M", first_seen=now, last_seen=now)
    UsageHour.objects.create(cluster=cluster, device=device, namespace="ns", pod="p", gpu_model="M",
                             gpu_fraction=1.0, sample_count=1, gpu_seconds=60.0,
                             hour_start=last.replace(hour=10, minute=0, second=0, microsecond=0))
    assert default_period() == f"{last:%Y-%m}"
