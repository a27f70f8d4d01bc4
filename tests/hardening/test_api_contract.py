"""The API says what it accepts and answers in its own language (docs/api.md, "Errors"): the
OpenAPI document states the patterns of periods and dates and every status an operation answers,
values it allows are accepted, an empty enum value is refused, and an unknown path under /api/
is a JSON 404, not the HTML page."""
import re

import pytest
from hypothesis import HealthCheck, given, settings as hsettings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from gpuportal.openapi import INSTANT_PATTERN, PERIOD_PATTERN
from tests.support.factories import make_user

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
    assert chargeback["period"]["schema"]["pattern"] == "^$|" + PERIOD_PATTERN    # empty: the default
    assert chargeback["shared_idle"]["schema"]["enum"] == ["apart", "spread"]
    usage = params_of(doc, "/api/v1/usage/")
    assert usage["start"]["schema"]["pattern"] == usage["end"]["schema"]["pattern"] == "^$|" + INSTANT_PATTERN
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


def test_single_field_bounds_are_in_the_schema(finance_api):
    doc = schema(finance_api)
    assert params_of(doc, "/api/v1/quota-recommendations/")["window_days"]["schema"] == \
        {"type": "integer", "minimum": 1, "maximum": 366}
    # right-sizing reads hourly rows per pod: MAX_HOURLY_REPORT_DAYS (docs/security.md)
    assert params_of(doc, "/api/v1/rightsizing/")["window_days"]["schema"] == \
        {"type": "integer", "minimum": 1, "maximum": 31}
    idle = params_of(doc, "/api/v1/idle/")
    assert idle["max_utilization"]["schema"] == {"type": "number", "minimum": 0, "maximum": 1}
    assert idle["min_idle_minutes"]["schema"] == {"type": "number", "minimum": 0}
    assert params_of(doc, "/api/v1/usage/")["team"]["schema"]["pattern"] == r"^[^\x00]*$"
    body = doc["components"]["schemas"]["PeriodRequest"]
    assert body["properties"]["period"]["pattern"] == PERIOD_PATTERN and body["required"] == ["period"]
    rate = doc["components"]["schemas"]["Rate"]["properties"]
    assert rate["hourly_rate"]["pattern"] == r"^[0-9]{1,12}(\.[0-9]{1,6})?$"
    assert re.fullmatch(rate["currency"]["pattern"], "SEK") and re.fullmatch(rate["currency"]["pattern"], "sek")
    assert not re.fullmatch(rate["currency"]["pattern"], "Sek") and not re.fullmatch(rate["currency"]["pattern"], "ABC")
    assert "oneOf" not in rate["mig_profile"] and rate["mig_profile"]["pattern"] == r"^[^\x00]*$"
    usage = doc["paths"]["/api/v1/usage/"]["get"]["description"]
    assert "`end` must be after `start`" in usage and "at most MAX_REPORT_DAYS days" in usage


def test_the_forecast_schema_names_the_running_month(finance_api):
    from apps.reports.api.forecast import running_period
    period = params_of(schema(finance_api), "/api/v1/forecast/")["period"]["schema"]
    assert period["enum"] == [running_period(), ""]


@pytest.mark.parametrize("day", ["2026-02-29", "2026-04-31", "2100-02-29"])
def test_the_instant_pattern_has_no_impossible_days(day):
    assert not re.match(INSTANT_PATTERN, day)
    assert re.match(INSTANT_PATTERN, "2000-02-29") and re.match(INSTANT_PATTERN, "2028-02-29T10:00Z")


def test_a_window_ending_on_1_january_2000_is_answered(finance_api):
    """Its default start (a week earlier) is in 1999: no stored month, rows from the hours (was a 500)."""
    response = finance_api.get("/api/v1/usage/", {"end": "2000-01-01", "group_by": "cluster"})
    assert response.status_code == 200 and response.json()["start"] == "1999-12-25T00:00:00Z"


@pytest.mark.parametrize("path", ["/api/v1/chargeback/close/", "/api/v1/chargeback/reopen/"])
def test_a_period_body_that_is_not_an_object_is_a_400(finance_api, path):
    response = finance_api.post(path, "[null, null]", content_type="application/json")    # was a 500
    assert response.status_code == 400 and "period" in response.json()


def test_an_empty_format_is_refused(finance_api):
    response = finance_api.get("/api/v1/chargeback/", {"period": "2026-03", "format": ""})
    assert response.status_code == 400
    assert response.json() == {"format": "format is empty: give one of csv, json, xlsx"}


def test_rates_take_exactly_what_the_schema_states(db):
    client = APIClient()
    client.force_authenticate(make_user("adm", "admin"))
    good = {"gpu_model": "NVIDIA L4", "hourly_rate": "0.80", "currency": "usd", "effective_from": "2026-01-01"}
    assert client.get("/api/v1/rates/", {"price_class": "AAA"}).status_code == 400      # was 200, outside the enum
    for field, value in [("hourly_rate", 0.8), ("hourly_rate", "8e-1"), ("hourly_rate", "-1"), ("hourly_rate", ""),
                         ("currency", "Usd"), ("currency", "ABC"), ("gpu_model", 0), ("gpu_model", "   ")]:
        response = client.post("/api/v1/rates/", {**good, field: value}, format="json")
        assert response.status_code == 400 and field in response.json(), (field, value, response.content)
    assert client.post("/api/v1/rates/", {**good, "mig_profile": 0}, format="json").status_code == 400
    created = client.post("/api/v1/rates/", good, format="json")
    assert created.status_code == 201 and created.json()["currency"] == "USD"
    again = client.post("/api/v1/rates/", good, format="json")        # same key and day: a conflict, not a bad value
    assert again.status_code == 409 and "already exists" in again.json()["detail"]


def test_idle_refuses_an_infinite_minimum(finance_api):
    response = finance_api.get("/api/v1/idle/", {"min_idle_minutes": "inf"})
    assert response.status_code == 400
    assert response.json() == {"min_idle_minutes": "min_idle_minutes='inf' must be a finite number, 0 or more"}
