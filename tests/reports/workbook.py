"""A month with known usage and rates for the statement workbook and its delivery, and a reader
of the workbook's sheets (tests/reports/test_statement_workbook.py, test_statement_delivery.py).

March 2026 (hand-computed; used ratio 0.5 everywhere, billing zone midnight to midnight):
  team A (cost centre CC-100, led by team_lead), cluster prod:
    ml  H100 on-demand 10 h at 2.345 USD (1-15 March)        = 23.45
    ml  H100 on-demand  2 h at 2.50  USD (from 16 March)      =  5.00
    nb  A100 on-demand  3 h at 150   JPY                      = 450 yen
    nb  H100 1g.10gb    5 instance-hours at 0.40 USD (1/7 GPU: 0.714286 GPU-h) = 2.00
  team B, cluster prod:
    cv  H100 spot (node spot-1) 4 h at 0.90 USD               =  3.60
    cv  adjustment for February: 1 late hour at 2.345 USD     =  2.345
  unallocated capacity, prod: H100 on-demand 1 h at 2.345      =  2.345
  totals, rounded once (docs/chargeback.md, "Rounding"): JPY 450; USD 30.45 + 5.945 + 2.345 =
  38.74 exactly; floors 30.45 + 5.94 + 2.34 leave one cent, which goes to the first of the equal
  remainders (unallocated capacity sorts first): A 30.45, B 5.94 (3.60 + 2.34), unallocated 2.35
Clusters: prod ingested to 1 April (not behind), edge to 20 March (behind, no usage).
"""
import io
from datetime import date

from openpyxl import load_workbook

from apps.accounting.actions.periods import do_close_period
from apps.clusters.models import Cluster
from apps.teams.models import Team

from tests.support.factories import A100, make_cluster, make_device, make_namespace, make_pool, make_rate, make_team, make_usage, utc

H100 = "NVIDIA H100 80GB HBM3"


def build_march(team_lead, finance):
    prod = make_cluster()
    make_cluster("edge")
    Cluster.objects.filter(name="prod").update(ingested_until=utc(2026, 4, 1))
    Cluster.objects.filter(name="edge").update(ingested_until=utc(2026, 3, 20))
    make_team("A", lead=team_lead)
    Team.objects.filter(name="A").update(cost_centre="CC-100")
    make_namespace(prod, "ml", "A")
    make_namespace(prod, "nb", "A")
    make_namespace(prod, "cv", "B")
    make_rate(hourly_rate="2.345")
    make_rate(hourly_rate="2.50", effective_from=date(2026, 3, 16))
    make_rate(mig_profile="1g.10gb", hourly_rate="0.40")
    make_rate(price_class="spot", hourly_rate="0.90")
    make_rate(model=A100, hourly_rate="150", currency="JPY")
    make_pool(prod, "spot-*", "spot")
    make_usage(make_device(prod), "cv", utc(2026, 2, 10, 12), hours=2)
    do_close_period("2026-02", actor=finance)
    make_usage(make_device(prod), "cv", utc(2026, 2, 27, 12), hours=1)     # late: an adjustment in March
    make_usage(make_device(prod), "ml", utc(2026, 3, 1, 12), hours=10)
    make_usage(make_device(prod), "ml", utc(2026, 3, 20, 12), hours=2)
    make_usage(make_device(prod, model=A100), "nb", utc(2026, 3, 3, 12), hours=3)
    make_usage(make_device(prod, mig_profile="1g.10gb", fraction=1 / 7), "nb", utc(2026, 3, 4, 12), hours=5)
    make_usage(make_device(prod, host="spot-1"), "cv", utc(2026, 3, 10, 12), hours=4)
    make_usage(make_device(prod), "", utc(2026, 3, 5, 12), hours=1)
    return prod


def read_book(content: bytes):
    return load_workbook(io.BytesIO(content))


def table(ws):
    """(rows as dicts by header, totals {currency: cost}) of a sheet whose row 1 is its header."""
    header = [c.value for c in ws[1]]
    rows, totals = [], {}
    for values in ws.iter_rows(min_row=2, values_only=True):
        if all(v is None for v in values):
            continue
        row = dict(zip(header, values))
        if values[0] == "Total":
            totals[row.get("Currency", row.get("currency"))] = row.get("Cost", row.get("cost"))
        else:
            rows.append(row)
    return rows, totals


def cover(ws) -> dict:
    """The Summary sheet's facts: column A label -> column B value (first occurrence)."""
    facts = {}
    for a, b, *_ in ws.iter_rows(min_row=2, values_only=True):
        if a is not None and a not in facts:
            facts[a] = b
    return facts


def cover_table(ws, title: str) -> list[dict]:
    """The rows of a titled table on the Summary sheet (title, header, rows up to a blank row)."""
    rows = list(ws.iter_rows(values_only=True))
    start = next(i for i, r in enumerate(rows) if r[0] == title)
    header = [v for v in rows[start + 1] if v is not None]
    out = []
    for r in rows[start + 2:]:
        if all(v is None for v in r):
            break
        out.append(dict(zip(header, r)))
    return out
