"""No statement of a request holds a worker past its kind's limit (issue 42): pages and API
reads STATEMENT_TIMEOUT_SECONDS, exports and writes STATEMENT_TIMEOUT_EXPORT_SECONDS, Celery
workers STATEMENT_TIMEOUT_WORKER_SECONDS. Before, the database had no statement timeout: a
400-day idle call ran as long as it took, and three of them held /healthz for 27 s."""

import pytest
from django.db import connection, connections

from gpuportal import dbtimeout
from tests.support.factories import make_user
from tests.support.db_locks import table_locked

pytestmark = pytest.mark.postgres


def shown_timeout(conn=connection) -> str:
    with conn.cursor() as cur:
        cur.execute("SHOW statement_timeout")
        return cur.fetchone()[0]


@pytest.mark.django_db
def test_each_kind_of_request_gets_its_timeout(client, settings):
    client.force_login(make_user("finance", "finance"))
    for url, params, expected in [
        ("/api/v1/usage/", {"group_by": "team"}, "30s"),
        ("/api/v1/usage/", {"group_by": "team", "format": "csv"}, "5min"),
        ("/api/v1/chargeback/xlsx/", {"period": "2026-03"}, "5min"),
        ("/api/v1/chargeback/focus/", {"period": "2026-03"}, "5min"),
        ("/", {}, "30s"),
    ]:
        assert client.get(url, params).status_code == 200, url
        assert shown_timeout() == expected, url
    settings.STATEMENT_TIMEOUT_SECONDS = 0        # 0: the server's own (none here)
    client.get("/api/v1/usage/", {"group_by": "team"})
    assert shown_timeout() == "0"


@pytest.mark.django_db(transaction=True)
def test_a_statement_past_its_limit_is_a_503_naming_the_setting(settings):
    """The rate card's table held by another transaction: the API's read waits, is cancelled at
    the 0.2 s limit and answers 503 with the reason, not a 500 after however long."""
    settings.STATEMENT_TIMEOUT_SECONDS = 0.2
    from rest_framework.test import APIClient
    finance = APIClient()
    finance.force_authenticate(make_user("admin", "admin"))
    with table_locked("accounting_rate"):
        response = finance.get("/api/v1/rates/")
    assert response.status_code == 503 and response["Retry-After"] == "60"
    assert response.json() == {"detail": "the database took longer than 0.2 s (STATEMENT_TIMEOUT_SECONDS) for this "
                                         "request; ask for a shorter window or a narrower scope"}
    assert finance.get("/api/v1/rates/").status_code == 200
    connection.connection.execute("RESET statement_timeout")     # the test database's flush after


@pytest.mark.django_db
def test_a_workers_connections_get_the_workers_timeout(settings):
    settings.STATEMENT_TIMEOUT_WORKER_SECONDS = 600
    fresh = connections.create_connection("default")
    try:
        assert shown_timeout(fresh) == "0"          # a command's connection: the server's own
    finally:
        fresh.close()
    dbtimeout._worker_started()                    # what worker_process_init does in a worker
    fresh = connections.create_connection("default")
    try:
        assert shown_timeout(fresh) == "10min"
    finally:
        fresh.close()
        dbtimeout._in_worker = False
