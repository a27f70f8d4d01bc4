"""A window's limit follows what the endpoint reads (issue 42): reads of hourly rows per pod
(the idle API and page, right-sizing) stop at MAX_HOURLY_REPORT_DAYS (93 days by default),
reads of daily figures at MAX_REPORT_DAYS (400). Before, a viewer's 400-day idle call took
8.9 s and 5.5 MB at 16 GPUs, `window_days=366` on right-sizing 4.6 s; both were accepted. The
400 names the limit and its setting; the OpenAPI schema states it per endpoint."""
import pytest

from tests.support.factories import make_user
from tests.support.db_locks import table_locked

pytestmark = pytest.mark.django_db
YEAR = {"start": "2025-10-24", "end": "2026-11-28"}         # 400 days
QUARTER = {"start": "2026-08-28", "end": "2026-11-28"}      # 92 days


def test_hourly_reads_have_the_shorter_limit(api, client):
    viewer = make_user("viewer", "viewer")
    c = api(viewer)
    refused = c.get("/api/v1/idle/", YEAR)
    assert refused.status_code == 400
    assert refused.json() == {"end": "the window is 400 days; the limit for reads of hourly rows is 93 days "
                                     "(MAX_HOURLY_REPORT_DAYS)"}
    assert c.get("/api/v1/idle/", QUARTER).status_code == 200
    assert c.get("/api/v1/usage/", {**YEAR, "group_by": "team"}).status_code == 200    # daily figures: 400 days
    assert c.get("/api/v1/usage/", {"start": "2025-01-01", "end": "2026-11-28", "group_by": "team"}).json() == \
        {"end": "the window is 696 days; the limit is 400 days (MAX_REPORT_DAYS)"}
    client.force_login(viewer)
    page = client.get("/idle/", YEAR)
    assert page.status_code == 400 and "the limit for reads of hourly rows is 93 days" in page.content.decode()
    assert client.get("/idle/", QUARTER).status_code == 200


def test_right_sizing_takes_at_most_its_own_limit(api, client):
    """Right-sizing reads every hourly row of each workload: its window has its own limit,
    MAX_RIGHTSIZING_DAYS (31), shorter than the idle list's (93: it reads whole days from the
    per-pod day summary)."""
    admin = make_user("admin", "admin")
    for days in (366, 93, 32):
        refused = api(admin).get("/api/v1/rightsizing/", {"window_days": days})
        assert refused.status_code == 400
        assert refused.json() == {"window_days": "window_days must be a whole number of days, 1 to 31 "
                                                 "(MAX_RIGHTSIZING_DAYS: this reads every hourly row of each "
                                                 "workload)"}
    assert api(admin).get("/api/v1/rightsizing/", {"window_days": 31}).status_code == 200
    assert api(admin).get("/api/v1/idle/", {"start": "2026-09-01", "end": "2026-11-28"}).status_code == 200  # 88 d
    assert api(admin).get("/api/v1/quota-recommendations/", {"window_days": 366}).status_code == 200
    client.force_login(admin)
    assert client.get("/advice/rightsizing/", {"window_days": 32}).status_code == 400
    assert 'name="window_days" min="1" max="31"' in client.get("/advice/rightsizing/").content.decode()


def test_the_default_right_sizing_window_never_passes_its_limit(settings):
    from apps.recommendations.rightsizing.rows import default_days
    assert default_days() == 28
    settings.MAX_RIGHTSIZING_DAYS = 14
    assert default_days() == 14


def test_the_limits_are_configurable_and_in_the_schema(api, settings):
    admin = make_user("admin", "admin")
    settings.MAX_HOURLY_REPORT_DAYS = 200
    assert api(admin).get("/api/v1/idle/", {"start": "2026-06-01", "end": "2026-11-28"}).status_code == 200   # 180 days
    schema = api(admin).get("/api/v1/schema/", {"format": "json"}).json()
    idle = schema["paths"]["/api/v1/idle/"]["get"]["description"]
    usage = schema["paths"]["/api/v1/usage/"]["get"]["description"]
    assert "at most MAX_HOURLY_REPORT_DAYS days long (93 as configured)" in idle
    assert "at most MAX_REPORT_DAYS days long (400 as configured)" in usage
    window_days = next(p for p in schema["paths"]["/api/v1/rightsizing/"]["get"]["parameters"]
                       if p["name"] == "window_days")
    assert window_days["schema"]["maximum"] == 31 and "MAX_RIGHTSIZING_DAYS" in window_days["description"]
    rightsizing = schema["paths"]["/api/v1/rightsizing/"]["get"]["description"]
    assert "at most MAX_RIGHTSIZING_DAYS days long (31 as configured)" in rightsizing


def test_the_api_throttle_defaults_to_600_a_minute():
    from rest_framework.throttling import UserRateThrottle
    assert UserRateThrottle.THROTTLE_RATES["user"] == "600/min"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_user_runs_at_most_long_reads_per_user_at_once(settings):
    """With LONG_READS_PER_USER=1, a second idle or right-sizing call of the same user while the
    first still reads is a 429 naming the setting; another user, and the same user once the
    first has finished, are answered. The first call is held on a locked table."""
    import threading

    from django.core.cache import cache
    from django.db import connections
    from rest_framework.test import APIClient

    settings.LONG_READS_PER_USER = 1
    cache.clear()
    ann, bob = make_user("ann", "viewer"), make_user("bob", "viewer")

    def client(user):
        c = APIClient()
        c.force_authenticate(user)
        return c
    first = []

    def long_call():
        try:
            first.append(client(ann).get("/api/v1/idle/", QUARTER).status_code)
        finally:
            connections.close_all()
    caller = threading.Thread(target=long_call)
    with table_locked("accounting_usagehour", longest=30):
        caller.start()
        for _ in range(100):        # until the first call holds its slot
            if cache.get("long-reads:%s" % ann.pk):
                break
            threading.Event().wait(0.05)
        refused = client(ann).get("/api/v1/rightsizing/")
        assert refused.status_code == 429 and refused["Retry-After"] == "10"
        assert refused.json() == {"detail": "you already have 1 long read (idle GPUs, right-sizing) running; wait "
                                            "for one to finish (LONG_READS_PER_USER). Expected available in 10 seconds."}
        assert client(bob).get("/api/v1/rightsizing/").status_code == 200
    caller.join()
    assert first == [200]
    assert client(ann).get("/api/v1/rightsizing/").status_code == 200
