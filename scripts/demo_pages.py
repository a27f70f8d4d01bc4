"""What the demo smoke reads of a page (scripts/demo_smoke.py): the rows and column headers of
its tables, and the numbers in their cells; a check that finds something amiss raises Failure,
which the smoke reports in one line. Standard library only, as the smoke itself."""
from __future__ import annotations

import re
from html.parser import HTMLParser


class Failure(Exception):
    pass


class Tables(HTMLParser):
    """Body rows (<td> cells' text) of every <table id=...> in a page, and its column
    headers (<th> in <thead>), so a check can name the column it reads."""

    def __init__(self, html: str):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.headers: dict[str, list[str]] = {}
        self._table = None
        self._id = None
        self._row = None
        self._cell = None
        self._head = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._id = dict(attrs).get("id") or ""
            self._table = self.tables.setdefault(self._id, [])
        elif tag == "thead" and self._table is not None:
            self._head = self.headers.setdefault(self._id, [])
        elif tag == "th" and self._head is not None:
            self._cell = []
        elif tag == "tr" and self._table is not None and self._head is None:
            self._row = []
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "th" and self._head is not None and self._cell is not None:
            self._head.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "thead":
            self._head = None
        elif tag == "td" and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._row:
                self._table.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def number(text: str) -> float:
    """'1,234.50' / '12.5 %' / '3.10 EUR' / '$3.10' / '-€3.10' (money on the pages) -> float; anything else -> 0."""
    m = re.match(r"(-?)[^\d\s-]*([\d,]*\.?\d+)", text.strip())
    return float(m.group(1) + m.group(2).replace(",", "")) if m else 0.0


def rows(html: str, table: str, who: str, path: str) -> list[list[str]]:
    found = Tables(html).tables.get(table)
    if found is None:
        raise Failure(f"{who}: /{path.lstrip('/')} has no table #{table}")
    return found


def column_of(html: str, table: str, header: str, who: str, path: str) -> int:
    """The index of a table's column by its header (roles that see money get cost columns)."""
    headers = Tables(html).headers.get(table, [])
    for i, text in enumerate(headers):
        if text.startswith(header):
            return i
    raise Failure(f"{who}: /{path.lstrip('/')} table #{table} has no column {header!r} (columns: {headers})")
