"""XLSX cells and the XLSX renderer (finance lives in spreadsheets).

Text cells are stored as strings, never as formulas, and escaped like CSV cells (a leading
=, +, - or @ gets a quote): a team named "=HYPERLINK(...)" stays text.
Money goes in as numbers, so sums in the sheet work, with a number format showing the
currency's minor unit and thousands separators (#,##0 for JPY, #,##0.00 for USD, #,##0.000
for KWD; docs/dates-and-money.md).
The statement workbook itself is apps/reports/statement_xlsx.py.
"""
import io
from datetime import date
from decimal import Decimal

from openpyxl import Workbook
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE, TYPE_STRING
from openpyxl.styles import Font
from openpyxl.utils import get_column_letter
from rest_framework.renderers import BaseRenderer

from apps.accounting.currencies import minor_digits
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
