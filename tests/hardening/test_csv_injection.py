"""Names typed by admins that start with =, +, - or @ never become formulas in a CSV or XLSX."""
import csv
import io

import openpyxl

from .seed import Names
from tests.support.bodies import body_of

NAMES = Names(team_a="=HYPERLINK(\"http://evil.example\",\"acme\")", ns_a="+acme-train", pod_a="-acme-pod",
              team_b="@zebra", ns_b="=zebra-ns", pod_b="+zebra-pod", cost_centre_a="=1+2",
              cost_centre_b="@SUM(A1)", cluster="-east")
FORMULA_START = ("=", "+", "-", "@")


def is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def downloads(world):
    p, c = world.open_period, world.names.cluster
    return [
        "/api/v1/usage/?group_by=team&format=csv", "/api/v1/usage/?group_by=namespace&format=csv",
        "/api/v1/usage/?group_by=cluster&format=csv", "/api/v1/idle/?format=csv",
        "/api/v1/idle/?format=csv&max_utilization=1&min_idle_minutes=0",
        f"/api/v1/chargeback/?period={p}&group_by=team&format=csv",
        f"/api/v1/chargeback/?period={p}&group_by=namespace&format=csv",
        f"/api/v1/chargeback/?period={world.closed_period}&group_by=namespace&format=csv",
        f"/api/v1/chargeback/?period={p}&group_by=namespace&format=xlsx",
        f"/api/v1/chargeback/xlsx/?period={p}", f"/api/v1/chargeback/xlsx/?period={world.closed_period}",
        f"/api/v1/chargeback/focus/?period={p}", f"/api/v1/chargeback/focus/?period={world.closed_period}",
        "/api/v1/quota-recommendations/?format=csv", "/api/v1/rightsizing/?format=csv", "/api/v1/rates/?format=csv", "/api/v1/forecast/?format=csv",
        "/explore/?format=csv", "/explore/?format=csv&grain=hour", "/idle/?format=csv&max_utilization=1&min_idle_minutes=0",
        "/api/v1/usage/?group_by=team&format=csv&cluster=" + c,
    ]


def cells(response):
    content = body_of(response)
    if content[:2] == b"PK":
        book = openpyxl.load_workbook(io.BytesIO(content))
        for sheet in book.worksheets:
            for row in sheet.iter_rows():
                for cell in row:
                    assert cell.data_type != "f", f"formula cell {cell.coordinate}: {cell.value!r}"
                    if isinstance(cell.value, str):
                        yield cell.value
    else:
        for row in csv.reader(io.StringIO(content.decode())):
            yield from row


def test_no_cell_of_any_download_starts_a_formula(as_role, world):
    c = as_role("admin")
    world.rate.gpu_model = "=cmd|' /C calc'!A0"
    world.rate.save()
    names_seen = set()
    for url in downloads(world):
        response = c.get(url)
        assert response.status_code == 200, url
        for value in cells(response):
            assert not value.startswith(FORMULA_START) or is_number(value), f"{url}: cell {value!r}"
            names_seen.update(n for n in (world.names.team_a, world.names.ns_b, world.names.pod_b)
                              if value == "'" + n)
    assert len(names_seen) == 3, f"{names_seen}: the hostile names must be in the downloads, escaped with a leading '"


def test_negative_numbers_stay_numbers():
    """A negative amount, as a number or as the decimal text money is written in, is a number;
    formula text is not (docs/dates-and-money.md)."""
    from apps.web.csv import safe_cell
    assert safe_cell(-12.5) == -12.5 and safe_cell("-12.50") == "-12.50" and safe_cell("=1") == "'=1"
    assert safe_cell("-12.50+1") == "'-12.50+1" and safe_cell("-acme-pod") == "'-acme-pod"


SEMICOLON_FORMULA = "job;=cmd|' /C calc'!A0"


def formula_cells(text, delimiter):
    return [cell for row in csv.reader(io.StringIO(text), delimiter=delimiter) for cell in row
            if cell.lstrip(" ").startswith(FORMULA_START + ("\t", "\r")) and not is_number(cell)]


def test_a_formula_after_a_separator_is_quoted_and_neutralised():
    """A spreadsheet splitting on ";" (de_DE) read `job;=cmd…` as two cells, the second a
    formula: the guard looked at the first character only (issue 42)."""
    from apps.web.csv import csv_chunks, rows_to_csv, safe_cell
    assert safe_cell(SEMICOLON_FORMULA) == "job;'=cmd|' /C calc'!A0"
    assert safe_cell("a, +1;@x") == "a, '+1;'@x" and safe_cell("=a;-b") == "'=a;'-b"
    assert safe_cell("gpu;mig") == "gpu;mig" and safe_cell("-10.00") == "-10.00"
    rows = [{"name": SEMICOLON_FORMULA, "other": "x,=1", "n": 2, "empty": None}]
    for text in (rows_to_csv(rows), b"".join(csv_chunks(rows, ["name", "other", "n", "empty"])).decode()):
        assert text.splitlines()[1] == '"job;\'=cmd|\' /C calc\'!A0","x,\'=1",2,'
        for delimiter in (",", ";"):
            assert formula_cells(text, delimiter) == [], delimiter
    # a row quoted cell by cell reads back as written: a YAML cell's newlines and quotes stay in it
    text = rows_to_csv([{"a": "x;y", "b": 'kind: Pod\n  name: "a, b"', "c": 1.5}])
    assert list(csv.reader(io.StringIO(text)))[1] == ["x;y", 'kind: Pod\n  name: "a, b"', "1.5"]


def test_no_download_cell_starts_a_formula_when_split_on_semicolons(as_role, world):
    c = as_role("admin")
    world.rate.gpu_model = SEMICOLON_FORMULA
    world.rate.save()
    text = body_of(c.get("/api/v1/rates/?format=csv")).decode()
    assert "\"job;'=cmd|' /C calc'!A0\"" in text
    assert formula_cells(text, ";") == [] and formula_cells(text, ",") == []
