"""Exports stream (docs/performance.md, "Exports stream"): the FOCUS CSV, the statement CSV and
the explorer's CSV are written as the client reads them, so the memory they take while sent does
not grow with the month, and the first bytes leave before the last row is made."""
import csv
import io
import tracemalloc
from datetime import date
from pathlib import Path

import pytest
from django.core.management import call_command

from apps.accounting.ledger.daily_money import focus_month
from apps.reports.api.focus import issuer
from apps.reports.focus_csv import columns, focus_rows
from apps.simulator.benchseed import seed_month
from apps.web.csv import CHUNK_ROWS, rows_to_csv

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[2]
FOCUS = "/api/v1/chargeback/focus/"


@pytest.fixture
def fleet(db):
    """One seeded fleet, 7 days of October and 28 of November: November's FOCUS export has 4×
    October's rows (a row per line and day, the same lines)."""
    seeded = seed_month(date(2026, 10, 1), days=7, gpus=128, namespaces=64, teams=8, clusters=2)
    seeded["fleet"].seed_days(date(2026, 11, 1), 28)
    call_command("import_rates", str(ROOT / "apps/accounting/fixtures/rates.example.csv"), verbosity=0)
    return seeded


def streamed_peak(response) -> tuple[int, int, bytes, int]:
    """(peak bytes allocated while the body is read, chunks, the first two chunks, bytes) — the body's chunks are
    counted as they come and dropped, as a server sends them."""
    assert response.streaming
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        size, chunks, head = 0, 0, b""
        for chunk in response.streaming_content:
            size += len(chunk)
            chunks += 1
            if chunks <= 2:
                head += chunk
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, chunks, head, size


def test_focus_export_memory_is_flat_in_the_size_of_the_month(fleet, finance, api):
    client = api(finance)
    october = client.get(FOCUS, {"period": "2026-10"})
    assert october.status_code == 200 and october["Content-Type"] == "text/csv; charset=utf-8"
    assert october["Content-Disposition"] == 'attachment; filename="focus-1.0-2026-10.csv"'
    small_peak, small_chunks, _, small_size = streamed_peak(october)
    big_peak, big_chunks, _, big_size = streamed_peak(client.get(FOCUS, {"period": "2026-11"}))
    # 4× the days, 4× the rows and bytes (the same lines, each on 28 days instead of 7)...
    assert 3.5 < big_size / small_size < 4.5
    assert big_chunks > small_chunks > 2
    # ...but the memory taken while sending stays that of a chunk of rows, not of the month:
    # far below 4× October's, and far below November's rows made at once and written as one text.
    assert big_peak < 1.5 * small_peak
    month = focus_month("2026-11")
    tracemalloc.start()
    try:
        whole = rows_to_csv(focus_rows(month, None, issuer()), columns()).encode()
        at_once = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(whole) == big_size
    assert big_peak < at_once / 4


def test_focus_export_sends_its_header_before_it_has_made_the_rows(fleet, finance, api):
    response = api(finance).get(FOCUS, {"period": "2026-11"})
    chunks = iter(response.streaming_content)
    header = next(chunks)
    assert header.startswith(b"AvailabilityZone,BilledCost,") and header.endswith(b"x_Efficiency\r\n")
    assert header.count(b"\r\n") == 1        # the header alone: no row made yet
    rows = next(chunks)
    assert rows.count(b"\r\n") == CHUNK_ROWS  # then the rows, a chunk at a time
    rest = b"".join(chunks)
    table = list(csv.reader(io.StringIO((header + rows + rest).decode())))
    assert len(table) - 1 > 2 * CHUNK_ROWS


def test_statement_csv_streams_the_bytes_it_always_wrote(fleet, finance, api):
    from apps.reports.statement_rows import CSV_COLUMNS, csv_rows, statement_payload
    from apps.accounting.ledger.statements import statement

    response = api(finance).get("/api/v1/chargeback/", {"period": "2026-11", "format": "csv"})
    assert response.status_code == 200 and response.streaming
    assert response["Content-Disposition"] == 'attachment; filename="chargeback-2026-11-team.csv"'
    body = b"".join(response.streaming_content)
    payload = statement_payload(statement("2026-11"), "team", None)
    assert body == rows_to_csv(list(csv_rows(payload)), CSV_COLUMNS).encode()
    assert body.count(b"\r\n") - 1 == sum(len(r["lines"]) for r in payload["results"])
