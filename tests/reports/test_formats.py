"""One way to write each figure (#26): thousands separators in every table, one date-time
format ("2026-11-24 10:00 UTC", `local_time`) on every page, the zone named once on the close
page. (The XLSX's separators: tests/reports/test_statement_workbook.py.)

Before: the statement's and the ingest log's numbers had no separators while the overview's
did; the team page wrote "2026-11-01", "2026-11-26 10:23" and "2026-11-20 10:00 UTC"; the
overview added a bare "UTC" after naive times; the close page said "… 00:00 UTC (UTC)."
"""
import re
from datetime import timedelta

from apps.accounting.core.periods import period_of
from apps.ingest.models import IngestRun
from apps.teams.models import NamespaceAssignment, Team

from tests.support.page_seed import at, day_d, usage

DATETIME = re.compile(r"\b\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d)?\b(?! [A-Z]{3,5}\b)")


def main_of(body):
    return body.split("<main>", 1)[1].split("</main>")[0]


def test_every_date_time_on_the_pages_is_written_one_way(login, seeded):
    alpha = seeded["alpha"]
    nlp = Team.objects.get(name="nlp")
    NamespaceAssignment.objects.create(namespace=alpha.namespaces.get(name="cv-train"), team=nlp,
                                       effective_from=day_d() - timedelta(days=1))   # a move on the team page
    client = login("admin")
    for path in ("/", "/teams/vision/", "/teams/nlp/", "/health/", "/admin-tools/ingest/", "/admin-tools/claims/",
                 "/advice/alerts/", "/account/tokens/"):
        body = main_of(client.get(path).content.decode())
        assert DATETIME.findall(body) == [], path


def test_tables_carry_thousands_separators(login, seeded):
    alpha, (gpu0, _, _) = seeded["alpha"], seeded["devices"]
    usage(gpu0, "cv-train", "big-0", 13, 1500 * 3600.0, 1200 * 3600.0)      # 1,500 GPU-hours in one row
    IngestRun.objects.create(cluster=alpha, window_start=at(0), window_end=at(1), status="succeeded",
                             rows_written=12345, samples_read=1234567, duration_seconds=1.0)
    client = login("admin")
    log = main_of(client.get("/admin-tools/ingest/").content.decode())
    assert ">12,345<" in log and ">1,234,567<" in log
    statement = main_of(client.get("/chargeback/", {"period": period_of(day_d())}).content.decode())
    assert "1,502.14" in statement        # vision: 1,500 + 2 h of train-0 + 1/7 of the MIG slice's hour
    assert not re.search(r">\d{4,}\.\d\d<", statement)


def test_the_close_page_names_the_zone_once(login, settings):
    # the fleet's history begins with a backfill of January 2025, so February 2025 may be closed
    from apps.ingest.models import IngestRun
    from tests.support.factories import make_cluster, utc
    IngestRun.objects.create(cluster=make_cluster(), window_start=utc(2025, 1, 1), window_end=utc(2025, 2, 1),
                             status=IngestRun.Status.SUCCEEDED)
    client = login("finance")
    body = main_of(client.get("/chargeback/close/", {"period": "2025-02"}).content.decode())
    assert "runs from 2025-02-01 00:00 UTC to 2025-03-01 00:00 UTC." in body
    settings.BILLING_TIMEZONE = "Europe/Berlin"
    body = main_of(client.get("/chargeback/close/", {"period": "2025-02"}).content.decode())
    assert "runs from 2025-02-01 00:00 CET to 2025-03-01 00:00 CET (Europe/Berlin)." in body
