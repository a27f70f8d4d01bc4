"""Pages are throttled per user as the API is, and a throttle whose cache (Redis) is down lets
requests through with a log line instead of a 500 (docs/security.md, "Throttling").

The expensive pages are the reason: the explorer at day grain over a long window and the idle
query cost seconds each, and any signed-in user could ask for them as fast as they liked.
"""
import logging

import pytest
from django.core.cache import cache
from django.test import RequestFactory, override_settings
from rest_framework.throttling import UserRateThrottle

from apps.web.throttle import FailOpenUserRateThrottle, PageRateThrottle

EXPENSIVE = ["/explore/?grain=day", "/idle/", "/explore/?grain=day&format=csv", "/advice/"]
DOWN = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}}


@pytest.fixture
def three_a_minute(monkeypatch):
    """A rate of 3 a minute, on a clean cache."""
    cache.clear()
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "3/min"})
    yield
    cache.clear()


def test_pages_answer_429_over_the_rate_per_user(as_role, world, client, three_a_minute):
    lead = as_role("team_lead")
    codes = [lead.get(url).status_code for url in EXPENSIVE]
    assert codes == [200, 200, 200, 429]
    refused = lead.get("/")
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1
    assert "Too many requests" in refused.content.decode()
    # the API keeps its own count: the lead's pages used up theirs, not the API's
    assert lead.get("/api/v1/idle/").status_code == 200
    # another user is counted apart
    client.logout()
    assert as_role("finance").get("/explore/?grain=day").status_code == 200


def test_a_page_rate_of_its_own(as_role, world, settings, three_a_minute):
    settings.PAGE_THROTTLE_RATE = "1/min"
    lead = as_role("team_lead")
    assert [lead.get("/idle/").status_code for _ in range(2)] == [200, 429]


def test_with_redis_down_pages_are_served_and_the_skip_is_logged(three_a_minute, as_role, world, caplog):
    lead = as_role("team_lead")
    with override_settings(CACHES=DOWN), caplog.at_level(logging.WARNING, logger="apps.web.throttle"):
        codes = [lead.get(url).status_code for url in EXPENSIVE + ["/chargeback/", "/advice/alerts/"]]
    assert codes == [200] * 6
    lines = [r.getMessage() for r in caplog.records if r.name == "apps.web.throttle"]
    rate = [line for line in lines if line.startswith("throttle 'page'")]
    assert len(rate) == 6 and "throttle 'page' not applied: its cache is unreachable" in rate[0]
    # the idle page's long-read limit (docs/security.md, "No request ties up the portal") fails open too
    assert [line for line in lines if line not in rate] == [
        line for line in lines if line.startswith("long-read limit not applied: its cache is unreachable")]
    assert len(lines) == 7


@pytest.mark.parametrize("throttle", [FailOpenUserRateThrottle, PageRateThrottle])
def test_the_throttles_fail_open(three_a_minute, db, world, caplog, throttle):
    request = RequestFactory().get("/api/v1/usage/")
    request.user = world.users["viewer"]
    with override_settings(CACHES=DOWN), caplog.at_level(logging.WARNING, logger="apps.web.throttle"):
        assert all(throttle().allow_request(request, None) for _ in range(5))
    assert len([r for r in caplog.records if "unreachable" in r.getMessage()]) == 5
