"""Chargeback statements as an XLSX workbook (finance lives in spreadsheets).

Text cells are stored as strings, never as formulas, and escaped like CSV cells (a leading
=, +, - or @ gets a quote): a team named "=HYPERLINK(...)" stays text.
Money goes in as numbers, so sums in the sheet work, with a number format showing the row's
currency's minor unit (0 for JPY, 0.00 for USD, 0.000 for KWD; docs/dates-and-money.md).
"""
import io
from decimal import Decimal

from openpyxl import Workbook
from openpyxl.cell.cell import TYPE_STRING
from rest_framework.renderers import BaseRenderer

from apps.accounting.currencies import minor_digits
from apps.web.csv import safe_cell

XLSX_MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
MONEY_COLUMNS = {"cost", "hourly_rate"}


def money_format(currency: str | None, amount: Decimal | None = None) -> str:
    """'0', '0.00' or '0.000': the currency's minor digits, more when the amount has them (a rate)."""
    digits = minor_digits(currency or "")
    if amount is not None:
        digits = max(digits, -min(amount.normalize().as_tuple().exponent, 0))
    return "0." + "0" * digits if digits else "0"


def _put(ws, row, col, value, money=False, currency=None):
    if isinstance(value, str) and money:
        value = Decimal(value)
    elif isinstance(value, str):
        value = safe_cell(value)  # as in the CSV: a copy-paste or re-save as CSV must not run it
    cell = ws.cell(row=row, column=col, value=value)
    if isinstance(value, str):
        cell.data_type = TYPE_STRING  # never a formula
    elif isinstance(value, Decimal):
        cell.number_format = money_format(currency, value) if money else "General"
    return cell


SUMMARY_COLUMNS = ["key", "team", "cluster", "namespace", "allocated_gpu_hours", "used_gpu_hours", "efficiency",
                   "unpriced_gpu_hours", "cost", "currency", "costs_by_currency"]


def _table(ws, first_row, columns, rows):
    for col, name in enumerate(columns, 1):
        _put(ws, first_row, col, name)
    for r, row in enumerate(rows, first_row + 1):
        for col, name in enumerate(columns, 1):
            value = row.get(name)
            if isinstance(value, dict):
                value = ", ".join(f"{k} {v}" for k, v in value.items())
            elif isinstance(value, bool):
                value = "yes" if value else "no"
            _put(ws, r, col, value, money=name in MONEY_COLUMNS and value is not None, currency=row.get("currency"))


def statement_workbook(payload: dict, line_columns: list[str]) -> bytes:
    wb = Workbook()
    summary = wb.active
    summary.title = "Summary"
    state = "closed" if payload.get("closed") else "open (may still change)"
    _put(summary, 1, 1, f"Chargeback statement {payload.get('period')} ({state}), by {payload.get('group_by')}")
    results = payload.get("results", [])
    _table(summary, 3, SUMMARY_COLUMNS, results)
    lines = wb.create_sheet("Lines")
    _table(lines, 1, line_columns, [{"key": r["key"], **line} for r in results for line in r["lines"]])
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


class XLSXRenderer(BaseRenderer):
    media_type = XLSX_MEDIA_TYPE
    format = "xlsx"
    charset = None
    render_style = "binary"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        from apps.accounting.statements import CSV_COLUMNS
        if isinstance(data, dict) and "results" in data:
            return statement_workbook(data, CSV_COLUMNS)
        wb = Workbook()  # an error body: one sheet of key / value
        ws = wb.active
        for r, (k, v) in enumerate((data or {}).items(), 1):
            _put(ws, r, 1, str(k))
            _put(ws, r, 2, str(v))
        out = io.BytesIO()
        wb.save(out)
        return out.getvalue()
