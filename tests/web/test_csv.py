"""apps/web/csv.py: the one CSV writer of every list and export (docs/security.md, CSV cells)."""
from decimal import Decimal

from apps.web.csv import csv_chunks, flatten_row, rows_to_csv, safe_cell


def test_numbers_stay_numbers_and_formulas_become_text():
    assert safe_cell(Decimal("-10.00")) == Decimal("-10.00")
    assert safe_cell("-10.00") == "-10.00"            # a negative adjustment's cost, as text
    assert safe_cell("=HYPERLINK(\"x\")") == "'=HYPERLINK(\"x\")"
    assert safe_cell("-2+3+cmd|' /C calc'!A0") == "'-2+3+cmd|' /C calc'!A0"
    assert safe_cell("@SUM(A1)") == "'@SUM(A1)"
    assert safe_cell(None) == ""
    assert safe_cell("research") == "research"


def test_nested_rows_flatten_to_dotted_columns():
    assert flatten_row({"team": "a", "cost": {"amount": "5.00", "currency": "USD"}}) == {
        "team": "a", "cost.amount": "5.00", "cost.currency": "USD"}


def test_columns_follow_first_appearance_and_cells_are_guarded():
    text = rows_to_csv([{"team": "a", "gpu_hours": 1.5}, {"team": "=b", "note": "x"}])
    assert text == "team,gpu_hours,note\r\na,1.5,\r\n'=b,,x\r\n"


def test_streamed_chunks_are_the_same_bytes_as_the_whole_text():
    rows = [{"n": i, "name": f"row-{i}"} for i in range(7)]
    chunks = list(csv_chunks(iter(rows), ["n", "name"], chunk_rows=3))
    assert len(chunks) == 1 + 3          # the header, then rows 0-2, 3-5 and 6
    assert b"".join(chunks).decode() == rows_to_csv(rows, ["n", "name"])
