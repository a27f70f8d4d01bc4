"""The monthly statement as a workbook finance can file (docs/chargeback.md, "The statement workbook").

Sheets: Summary (the cover: period, state, scope, totals, data freshness, the rates used), By
team, By namespace, By GPU model, Adjustments, Lines (the CSV's rows). Every figure is read from
`statement_book.StatementBook`, which takes them from the statement the page, the API
and the CSV show; this module only lays them out: money as numbers in the currency's minor unit,
a total row per currency (currencies are never added together), a frozen header row.
"""
from datetime import datetime
from zoneinfo import ZoneInfo

from django.utils import timezone
from openpyxl.styles import Font

from apps.accounting.core.periods import period_bounds

from apps.accounting.query.presets import local_text

from .statement_book import StatementBook
from .statement_rows import CSV_COLUMNS, UNALLOCATED_NAME, csv_rows
from .xlsx import DATE_FORMAT, HOURS_FORMAT, RATIO_FORMAT, Sheet, fit_columns, put, save

TITLE = Font(bold=True, size=14)
SHEETS = ("Summary", "By team", "By namespace", "By GPU model", "Adjustments", "Lines")
UNALLOCATED = UNALLOCATED_NAME    # the team column of GPUs no pod held
HOURS = ("Allocated GPU-h", "Used GPU-h", "Efficiency", "Unpriced GPU-h")


def state_text(book: StatementBook) -> str:
    """'open (…)' or 'closed at 2026-04-02 10:00 CEST by finance', in the billing zone."""
    if not book.closed:
        return "open: figures follow ingestion, rates and team mappings until the month is closed"
    when = local_text(book.closed_at, ZoneInfo(book.billing_timezone)) if book.closed_at else "an unknown time"
    return f"closed at {when}" + (f" by {book.closed_by}" if book.closed_by else "")


def scope_text(book: StatementBook) -> str:
    if book.scope is None:
        return "all teams, with unallocated capacity"
    return ", ".join(book.scope) if book.scope else "no team"


def rate_card_text(book: StatementBook) -> str:
    card = book.rate_card
    if not card:
        return "no rate card (nothing priced)"
    changed = card.get("changed_at")
    if changed:
        changed = local_text(datetime.fromisoformat(changed), ZoneInfo(book.billing_timezone))
    return f"version {card['version']}" + (f", last changed {changed}" if changed else "")


# ---------------------------------------------------------------- tables

class Table:
    """A sheet whose row 1 is the header (frozen), then data rows, then one total row per currency."""

    def __init__(self, ws, headers):
        self.ws, self.headers, self.row = ws, headers, 1
        for col, name in enumerate(headers, 1):
            put(ws, 1, col, name, bold=True)
        ws.freeze_panes = "A2"

    def add(self, values: dict, currency=None, bold=False):
        self.row += 1
        for col, name in enumerate(self.headers, 1):
            value = values.get(name)
            if name in ("Cost", "Hourly rate"):
                put(self.ws, self.row, col, value, money=value is not None, currency=currency, bold=bold)
            elif name == "Efficiency":
                put(self.ws, self.row, col, value, number_format=RATIO_FORMAT, bold=bold)
            elif name.endswith("GPU-h") or name == "Billed hours":
                put(self.ws, self.row, col, value, number_format=HOURS_FORMAT, bold=bold)
            else:
                put(self.ws, self.row, col, value, bold=bold)

    def totals(self, totals: dict[str, str], label_column: str):
        """A blank row, then 'Total' and the amount per currency."""
        self.row += 1
        for currency, amount in totals.items():
            self.add({label_column: "Total", "Currency": currency, "Cost": amount}, currency, bold=True)
        fit_columns(self.ws)


def hour_cells(figures: dict) -> dict:
    return {"Allocated GPU-h": figures["allocated_gpu_hours"], "Used GPU-h": figures["used_gpu_hours"],
            "Efficiency": figures["efficiency"], "Unpriced GPU-h": figures["unpriced_gpu_hours"]}


def add_costed(table: Table, cells: dict, costs_by_currency: dict[str, str]):
    """A row per currency of the group (hours on the first only, so a column sum counts them
    once); a group with nothing priced is one row without a cost."""
    if not costs_by_currency:
        table.add(cells)
        return
    for i, (currency, amount) in enumerate(costs_by_currency.items()):
        row = cells if i == 0 else {k: v for k, v in cells.items() if k not in HOURS and k != "Billed hours"}
        table.add({**row, "Currency": currency, "Cost": amount}, currency)


# ---------------------------------------------------------------- sheets

def summary_sheet(ws, book: StatementBook):
    zone = ZoneInfo(book.billing_timezone)
    start, end = period_bounds(book.period, zone)
    put(ws, 1, 1, f"Chargeback statement {book.period}").font = TITLE
    facts = [
        ("Period", book.period),
        ("Month", f"{local_text(start, zone)} – {local_text(end, zone)}"),
        ("Billing time zone", book.billing_timezone),
        ("State", state_text(book)),
        ("Teams", scope_text(book)),
        ("Unallocated cost", "spread over teams" if book.by_team.get("shared_idle") == "spread" else "shown apart"),
        ("Rate card", rate_card_text(book)),
        ("Generated", local_text(timezone.now(), zone)),
    ]
    row = 2
    for label, value in facts:
        row += 1
        put(ws, row, 1, label, bold=True)
        put(ws, row, 2, value)
    row += 2
    put(ws, row, 1, "Totals", bold=True)
    row += 1
    put(ws, row, 1, "Currency", bold=True)
    put(ws, row, 2, "Cost", bold=True)
    for currency, amount in book.totals_by_currency.items():
        row += 1
        put(ws, row, 1, currency)
        put(ws, row, 2, amount, money=True, currency=currency)
    row += 2
    put(ws, row, 1, "Data freshness", bold=True)
    row += 1
    for col, name in enumerate(("Cluster", "Ingested until", "Behind the month end"), 1):
        put(ws, row, col, name, bold=True)
    for f in book.freshness:
        row += 1
        put(ws, row, 1, f.cluster)
        put(ws, row, 2, local_text(f.ingested_until, zone) if f.ingested_until else "never")
        put(ws, row, 3, "yes: hours still to come will be adjustments later" if f.behind else "no")
    row += 2
    put(ws, row, 1, "Rate card in force", bold=True)
    row += 1
    headers = ("GPU model", "MIG profile", "Price class", "Hourly rate", "Currency", "Effective from", "Billed per")
    for col, name in enumerate(headers, 1):
        put(ws, row, col, name, bold=True)
    for r in book.rates:
        row += 1
        put(ws, row, 1, r.gpu_model)
        put(ws, row, 2, r.mig_profile)
        put(ws, row, 3, r.price_class)
        put(ws, row, 4, str(r.hourly_rate), money=True, currency=r.currency)
        put(ws, row, 5, r.currency)
        put(ws, row, 6, r.effective_from if r.effective_from else "not on the rate card", number_format=DATE_FORMAT)
        put(ws, row, 7, r.billed_unit)
    ws.freeze_panes = "A2"
    fit_columns(ws)


def by_team_sheet(ws, book: StatementBook):
    table = Table(ws, ["Team", "Cost centre", *HOURS, "Currency", "Cost"])
    for row in book.by_team["results"]:
        cells = {"Team": row["team"] or UNALLOCATED, "Cost centre": book.cost_centres.get(row["team"] or ""),
                 **hour_cells(row)}
        add_costed(table, cells, row["costs_by_currency"])
    table.totals(book.totals_by_currency, "Team")


def by_namespace_sheet(ws, book: StatementBook):
    table = Table(ws, ["Team", "Cluster", "Namespace", *HOURS, "Currency", "Cost"])
    for row in book.by_namespace:
        cells = {"Team": row["team"] or UNALLOCATED, "Cluster": row["cluster"], "Namespace": row["namespace"],
                 **hour_cells(row)}
        add_costed(table, cells, row["costs_by_currency"])
    table.totals(book.totals_by_currency, "Team")   # every line is in a row: the same total


def by_model_sheet(ws, book: StatementBook):
    table = Table(ws, ["GPU model", "MIG profile", "Price class", *HOURS, "Billed hours", "Billed unit",
                       "Hourly rate", "Currency", "Cost"])
    for row in book.by_model:
        cells = {"GPU model": row["gpu_model"], "MIG profile": row["mig_profile"], "Price class": row["price_class"],
                 **hour_cells(row), "Billed hours": row["billed_hours"], "Billed unit": row["billed_unit"],
                 "Hourly rate": row["hourly_rate"]}
        if row["costs_by_currency"]:
            [(currency, amount)] = row["costs_by_currency"].items()   # one rate, one currency
            table.add({**cells, "Currency": currency, "Cost": amount}, currency)
        else:
            table.add(cells)
    table.totals(book.totals_by_currency, "GPU model")


def adjustments_sheet(ws, book: StatementBook):
    table = Table(ws, ["Corrects month", "Team", "Cluster", "Namespace", "GPU model", "MIG profile", "Price class",
                       "Allocated GPU-h", "Used GPU-h", "Billed hours", "Billed unit", "Hourly rate", "Currency",
                       "Cost"])
    for line in book.adjustments:
        table.add({"Corrects month": line["adjusts_period"], "Team": line["team"], "Cluster": line["cluster"],
                   "Namespace": line["namespace"], "GPU model": line["gpu_model"],
                   "MIG profile": line["mig_profile"], "Price class": line["price_class"],
                   "Allocated GPU-h": line["allocated_gpu_hours"], "Used GPU-h": line["used_gpu_hours"],
                   "Billed hours": line["billed_hours"], "Billed unit": line["billed_unit"],
                   "Hourly rate": line["hourly_rate"], "Currency": line["currency"], "Cost": line["cost"]},
                  line["currency"])
    table.totals(book.adjustment_totals, "Corrects month")


def lines_sheet(ws, book: StatementBook):
    """The CSV's rows (`?format=csv&group_by=team`), column for column."""
    table = Table(ws, CSV_COLUMNS)
    for line in csv_rows(book.by_team):
        table.row += 1
        for col, name in enumerate(CSV_COLUMNS, 1):
            value = line.get(name)
            if isinstance(value, bool):
                value = "yes" if value else "no"
            put(ws, table.row, col, value, money=name in ("cost", "hourly_rate") and value is not None,
                currency=line.get("currency"))
    # Under the lines, as under every other table: a blank row, then one Total per currency.
    table.row += 1
    for currency, amount in book.totals_by_currency.items():
        table.row += 1
        put(ws, table.row, 1, "Total", bold=True)
        put(ws, table.row, CSV_COLUMNS.index("currency") + 1, currency, bold=True)
        put(ws, table.row, CSV_COLUMNS.index("cost") + 1, amount, money=True, currency=currency, bold=True)
    fit_columns(ws)


def statement_workbook(book: StatementBook) -> bytes:
    sheets = [Sheet(name) for name in SHEETS]
    for sheet, fill in zip(sheets, (summary_sheet, by_team_sheet, by_namespace_sheet, by_model_sheet,
                                    adjustments_sheet, lines_sheet)):
        fill(sheet, book)
    return save(sheets)      # openpyxl's write-only mode (apps/reports/xlsx.py)


def workbook_name(period: str) -> str:
    return f"chargeback-{period}-statement.xlsx"
