"""CSV output shared by every list endpoint: same rows as the JSON, formula-safe cells.

Exports whose size grows with the month (the statement, FOCUS, the explorer) stream
(`streaming_csv`): rows are written as they are made, a few hundred at a time, so neither the
rows nor the text of the whole file are ever held (docs/performance.md, "Exports stream").
"""
import csv
import io
import re
from collections.abc import Iterable, Iterator

from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer

CSV_CONTENT_TYPE = "text/csv; charset=utf-8"
CHUNK_ROWS = 500    # rows per chunk sent: ~0.5 MB of FOCUS text, far below a month's

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
# A plain decimal number, as money and hours are written ("-10.00", "1234", "0.125"): a
# spreadsheet reads it as a number, never as a formula, so it is written as it is.
PLAIN_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?", re.ASCII)
# A formula start after a separator: a spreadsheet that splits on ";" (the portal offers de_DE,
# whose spreadsheets do) or on "," reads what follows as a cell of its own.
FORMULA_AFTER_SEPARATOR = re.compile(r"([,;][ ]*)(?=[=+\-@\t\r])")


def safe_cell(value):
    """Neutralise spreadsheet formulas in text cells (OWASP CSV injection advice).

    Numbers stay numbers (docs/dates-and-money.md): ints, floats and Decimals, and text that is
    nothing but a plain decimal number, such as a negative adjustment's cost "-10.00". Any other
    text starting with =, +, -, @, a tab or a carriage return gets a leading quote, so a team
    named "=HYPERLINK(...)" or "-2+3+cmd|..." stays text. So does every such start after a
    separator, "," or ";", whichever the reader splits on: `job;=cmd|' /C calc'!A0` is written
    `job;'=cmd|' /C calc'!A0` (docs/security.md, "Hostile input").
    """
    if value is None:
        return ""
    if not isinstance(value, str) or PLAIN_NUMBER.fullmatch(value):
        return value
    if ("," in value or ";" in value) and FORMULA_AFTER_SEPARATOR.search(value):
        value = FORMULA_AFTER_SEPARATOR.sub(r"\1'", value)
    if value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def write_row(writer, out: io.StringIO, cells: list) -> None:
    """`writer.writerow(cells)`, with every text cell holding a ";" quoted as well: the writer
    quotes only for its own delimiter, and a reader splitting on ";" (a de_DE spreadsheet)
    then keeps such a value one cell (docs/security.md, "Hostile input")."""
    if not any(isinstance(c, str) and ";" in c for c in cells):
        writer.writerow(cells)
        return
    fields = []
    for cell in cells:
        if cell == "":      # alone in a row, an empty field is written "" (to tell it from no row)
            fields.append("")
            continue
        one = io.StringIO()
        # The row's own line terminator: QUOTE_MINIMAL quotes a field holding one of its characters.
        quoting = csv.QUOTE_ALL if isinstance(cell, str) and ";" in cell else csv.QUOTE_MINIMAL
        csv.writer(one, quoting=quoting, lineterminator="\r\n").writerow([cell])
        fields.append(one.getvalue()[:-2])
    out.write(",".join(fields) + "\r\n")


def flatten_row(row, prefix=""):
    flat = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten_row(value, prefix=f"{name}."))
        else:
            flat[name] = value
    return flat


def rows_to_csv(rows, columns=None):
    flat_rows = [flatten_row(r) for r in rows]
    if columns is None:
        columns = []
        for r in flat_rows:
            for k in r:
                if k not in columns:
                    columns.append(k)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(columns)
    for r in flat_rows:
        write_row(writer, out, [safe_cell(r.get(c)) for c in columns])
    return out.getvalue()


def csv_chunks(rows: Iterable[dict], columns: list[str], chunk_rows: int = CHUNK_ROWS) -> Iterator[bytes]:
    """The bytes `rows_to_csv(rows, columns)` writes, in chunks of `chunk_rows` rows, the header
    first: each row is written when it is taken from `rows` and dropped once sent."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(columns)
    yield _drain(out)
    pending = 0
    for row in rows:
        flat = flatten_row(row)
        write_row(writer, out, [safe_cell(flat.get(c)) for c in columns])
        pending += 1
        if pending == chunk_rows:
            yield _drain(out)
            pending = 0
    if pending:
        yield _drain(out)


def _drain(out: io.StringIO) -> bytes:
    data = out.getvalue().encode("utf-8")
    out.seek(0)
    out.truncate()
    return data


def streaming_csv(rows: Iterable[dict], columns: list[str], filename: str) -> StreamingHttpResponse:
    """A CSV download fed by `rows` as the client reads it (an attachment named `filename`)."""
    response = StreamingHttpResponse(csv_chunks(rows, columns), content_type=CSV_CONTENT_TYPE)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


class SafeCSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        if isinstance(data, dict) and "results" in data:
            rows = data["results"]
        elif isinstance(data, list):
            rows = data
        else:
            rows = [data]
        columns = None
        view = (renderer_context or {}).get("view")
        if view is not None and hasattr(view, "csv_columns"):
            columns = view.csv_columns(rows)
        return rows_to_csv(rows, columns).encode("utf-8")
