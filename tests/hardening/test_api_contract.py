"""The API says what it accepts and answers in its own language (docs/api.md, "Errors"): the
OpenAPI document states the patterns of periods and dates and every status an operation answers,
values it allows are accepted, an empty enum value is refused, and an unknown path under /api/
is a JSON 404, not the HTML page."""
import pytest
from hypothesis import HealthCheck, given, settings as hsettings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from gpuportal.openapi import INSTANT_PATTERN, PERIOD_PATTERN
from tests.chargeback.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def finance_api(db):
    client = APIClient()
    client.force_authenticate(make_user("fin", "finance"))
    return client


def schema(client):
    response = client.get("/api/v1/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def params_of(doc, path, method="get"):
    return {p["name"]: p for p in doc["paths"][path][method].get("parameters", [])}


def test_the_schema_states_patterns_enums_and_statuses(finance_api):
    doc = schema(finance_api)
    chargeback = params_of(doc, "/api/v1/chargeback/")
    assert chargeback["period"]["schema"]["pattern"] == PERIOD_PATTERN
    assert chargeback["shared_idle"]["schema"]["enum"] == ["apart", "spread"]
    usage = params_of(doc, "/api/v1/usage/")
    assert usage["start"]["schema"]["pattern"] == usage["end"]["schema"]["pattern"] == INSTANT_PATTERN
    assert "201" in doc["paths"]["/api/v1/rates/"]["post"]["responses"]
    assert "200" not in doc["paths"]["/api/v1/rates/"]["post"]["responses"]


@hsettings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(period=st.from_regex(PERIOD_PATTERN, fullmatch=True))
def test_every_period_the_schema_allows_is_accepted(finance_api, period):
    response = finance_api.get("/api/v1/chargeback/", {"period": period, "group_by": "team"})
    assert response.status_code == 200, (period, response.content[:200])


@pytest.mark.parametrize("bad", ["2026-3", "1999-12", "2026-13", "March"])
def test_a_period_outside_the_pattern_is_a_400_naming_it(finance_api, bad):
    response = finance_api.get("/api/v1/chargeback/", {"period": bad})
    assert response.status_code == 400 and "period" in response.json()


def test_an_empty_enum_value_is_refused(finance_api):
    response = finance_api.get("/api/v1/chargeback/", {"period": "2026-03", "shared_idle": ""})
    assert response.status_code == 400
    assert response.json() == {"shared_idle": "shared_idle is empty: give one of apart, spread"}


def test_unknown_api_paths_answer_json(finance_api):
    response = finance_api.get("/api/v1/no-such-thing/")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "no API endpoint at /api/v1/no-such-thing/; see /api/v1/docs/"}


def test_unknown_pages_stay_html(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")
