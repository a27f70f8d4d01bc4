"""XLSX cells and the XLSX renderer (finance lives in spreadsheets).

Text cells are stored as strings, never as formulas, and escaped like CSV cells (a leading
=, +, - or @ gets a quote): a team named "=HYPERLINK(...)" stays text.
Money goes in as numbers, so sums in the sheet work, with a number format showing the
currency's minor unit and thousands separators (#,##0 for JPY, #,##0.00 for USD, #,##0.000
for KWD; docs/dates-and-money.md).
The statement workbook itself is apps/reports/statement_xlsx.py. Its sheets are laid out on
`Sheet`s (any cell in any order, as a cover needs) and written by `save` through openpyxl's
write-only mode, row by row into the file: openpyxl never holds a worksheet of cells
(docs/performance.md, "Exports stream").
"""
import io
from collections import defaultdict
from datetime import date
from decimal import Decimal

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE, TYPE_STRING
from openpyxl.styles import Font
from openpyxl.utils import get_column_letter
from rest_framework.renderers import BaseRenderer

from apps.accounting.core.currencies import minor_digits
from apps.web.csv import safe_cell

XLSX_MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
HOURS_FORMAT = "#,##0.00"       # hours keep their 6 places as values; two are shown, as on the pages
RATIO_FORMAT = "0.0%"
DATE_FORMAT = "yyyy-mm-dd"
BOLD = Font(bold=True)


def money_format(currency: str | None, amount: Decimal | None = None) -> str:
    """'#,##0', '#,##0.00' or '#,##0.000': thousands separators (as on the pages) and the
    currency's minor digits, more when the amount has them (a rate)."""
    digits = minor_digits(currency or "")
    if amount is not None:
        digits = max(digits, -min(amount.normalize().as_tuple().exponent, 0))
    return "#,##0." + "0" * digits if digits else "#,##0"


class SheetCell:
    """A cell as laid out: its value and the styles `put` gives it."""
    __slots__ = ("value", "column", "data_type", "number_format", "font")

    def __init__(self, value, column):
        self.value, self.column, self.data_type, self.number_format, self.font = value, column, None, None, None

    def written(self, ws) -> WriteOnlyCell:
        cell = WriteOnlyCell(ws, value=self.value)
        if self.data_type:
            cell.data_type = self.data_type
        if self.number_format:
            cell.number_format = self.number_format
        if self.font:
            cell.font = self.font
        return cell


class ColumnWidth:
    __slots__ = ("width",)

    def __init__(self):
        self.width = None


class Sheet:
    """A worksheet being laid out: `cell`, `iter_rows`, `freeze_panes` and `column_dimensions`
    as openpyxl's, kept as plain values until `save` writes them."""

    def __init__(self, title: str):
        self.title, self.freeze_panes = title, None
        self.rows: dict[int, dict[int, SheetCell]] = {}
        self.column_dimensions: dict[str, ColumnWidth] = defaultdict(ColumnWidth)

    def cell(self, row: int, column: int, value=None) -> SheetCell:
        cell = self.rows.setdefault(row, {})[column] = SheetCell(value, column)
        return cell

    def iter_rows(self):
        for r in sorted(self.rows):
            yield [self.rows[r][c] for c in sorted(self.rows[r])]


def save(sheets: list[Sheet]) -> bytes:
    """The sheets as one workbook, written in write-only mode: widths and frozen panes first,
    then each row in order (a gap as an empty row)."""
    wb = Workbook(write_only=True)
    for sheet in sheets:
        ws = wb.create_sheet(sheet.title)
        if sheet.freeze_panes:
            ws.freeze_panes = sheet.freeze_panes
        for letter, dimension in sheet.column_dimensions.items():
            if dimension.width is not None:
                ws.column_dimensions[letter].width = dimension.width
        written = 0
        for r in sorted(sheet.rows):
            for _ in range(written + 1, r):
                ws.append([])
            cells = sheet.rows[r]
            row = [None] * max(cells)
            for c, cell in cells.items():
                row[c - 1] = cell.written(ws)
            ws.append(row)
            written = r
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def put(ws, row, col, value, *, money=False, currency=None, number_format=None, bold=False):
    """One cell: money as a Decimal with the currency's format, text escaped and never a formula."""
    if isinstance(value, str) and money:
        value = Decimal(value)
    elif isinstance(value, str):
        value = safe_cell(value)  # as in the CSV: a copy-paste or re-save as CSV must not run it
        # XML 1.0 cannot hold most control characters (a name typed into ?team= may carry one):
        # shown as U+FFFD, visibly not the character, instead of failing the whole workbook.
        value = ILLEGAL_CHARACTERS_RE.sub("\ufffd", value)
    cell = ws.cell(row=row, column=col, value=value)
    if isinstance(value, str):
        cell.data_type = TYPE_STRING  # never a formula
    elif money and isinstance(value, Decimal):
        cell.number_format = money_format(currency, value)
    elif number_format and isinstance(value, (int, float, Decimal, date)):
        cell.number_format = number_format
    if bold:
        cell.font = BOLD
    return cell


def fit_columns(ws, minimum=8, maximum=60):
    """Column widths from the longest value shown in each column (within bounds)."""
    widths: dict[int, int] = {}
    for row in ws.iter_rows():
        for cell in row:
            if cell.value is not None:
                length = len(str(cell.value)) + 2
                widths[cell.column] = max(widths.get(cell.column, 0), length)
    for col, width in widths.items():
        ws.column_dimensions[get_column_letter(col)].width = max(minimum, min(maximum, width))


def error_workbook(data) -> bytes:
    """An error body: one sheet of key / value."""
    wb = Workbook()
    ws = wb.active
    for r, (k, v) in enumerate((data or {}).items(), 1):
        put(ws, r, 1, str(k))
        put(ws, r, 2, str(v))
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


class XLSXRenderer(BaseRenderer):
    """Views hand over a finished workbook as bytes; anything else is an error body."""
    media_type = XLSX_MEDIA_TYPE
    format = "xlsx"
    charset = None
    render_style = "binary"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, (bytes, bytearray)):
            return bytes(data)
        return error_workbook(data if isinstance(data, dict) else {"detail": data})
