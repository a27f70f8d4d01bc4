"""One Chromium walk of every page as each role at 1440 px and 390 px (issue #43, docs/pages.md,
"The walk"): from the overview, every page the navigation links, and the detail pages they link
(a team page, a month's chargeback, the right-sizing's short list, the explorer by workload…),
on a small seeded history (a priced week, tests/support/page_seed.py).

On each page: no 5xx, no console error, no clipped column (a table wider than the page without a
horizontal scroller around it, or a cell whose content overflows its box), and every download
link whose figures the page shows adds up to the page: each is checked by one of `FIGURES`, and a
download without a check fails the walk, so a new one cannot slip by.
"""
import csv
import io
import re
from decimal import ROUND_HALF_UP, Decimal
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from .browser import browser, session, site  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

ROLES = ("viewer", "team_lead", "finance", "admin")
WIDTHS = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}
# Detail pages the walk follows from the pages it reaches (one link of each kind).
DETAILS = (
    ("team page", re.compile(r"^/teams/[^/]+/$")),
    ("month chargeback", re.compile(r"^/chargeback/\?(.*&)?period=\d{4}-\d{2}")),
    ("right-sizing short list", re.compile(r"^/advice/rightsizing/\?(.*&)?show=short")),
    ("explorer by a dimension", re.compile(r"^/explore/\?.*\b(team|namespace)=")),
)
NOT_PAGES = re.compile(r"format=|\.(csv|xlsx)$|^/accounts/logout|^/api/v1/(?!docs/$|redoc/$)|^/admin/.+")

CLIPPED_JS = """() => {
  const vw = document.documentElement.clientWidth, out = [];
  const scroller = el => {
    for (let p = el.parentElement; p && p !== document.documentElement; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll') return p;
    }
    return null;
  };
  const name = t => t.id || t.className || t.closest('section, main')?.querySelector('h1, h2')?.innerText || 'table';
  for (const t of document.querySelectorAll('table')) {
    if (!t.getClientRects().length) continue;        // not shown
    const r = t.getBoundingClientRect();
    if (!scroller(t) && r.right > vw + 1) out.push(`table ${name(t)} runs ${Math.round(r.right - vw)} px past the page`);
    for (const c of t.querySelectorAll('th, td')) {
      if (c.scrollWidth > c.clientWidth + 1)
        out.push(`a cell of ${name(t)} overflows its box: ${c.innerText.trim().slice(0, 40)}`);
    }
  }
  if (document.documentElement.scrollWidth > vw + 1) {
    let worst = null, right = vw;     // what sticks out furthest, outside any scroller
    for (const el of document.body.querySelectorAll('*')) {
      const r = el.getBoundingClientRect();
      if (r.right > right + 0.5 && !scroller(el)) { right = r.right; worst = el; }
    }
    const what = worst ? `${worst.tagName.toLowerCase()}${worst.id ? '#' + worst.id : ''} "${(worst.textContent || '').trim().slice(0, 40)}"` : '';
    out.push(`the page is ${document.documentElement.scrollWidth - vw} px wider than the screen: ${what}`);
  }
  return out;
}"""


def number(text: str) -> Decimal:
    """A shown figure ('$1,234.50', '12.25', '–') as a Decimal (0 for a dash or nothing)."""
    cleaned = re.sub(r"[^0-9.\-]", "", text.replace("–", ""))
    return Decimal(cleaned) if cleaned not in ("", "-", ".") else Decimal(0)


def cents(values) -> Decimal:
    return sum((Decimal(v or 0) for v in values), Decimal(0)).quantize(Decimal("0.01"))


def rows_of(s, href) -> list[dict]:
    response = s.context.request.get(s.base + href)
    assert response.status == 200, (href, response.status)
    return list(csv.DictReader(io.StringIO(response.text())))


def column_sums(s, table: str, headers: dict) -> dict:
    """The sum of each named column of the table on screen: header text → the sum."""
    return s.page.evaluate("""([table, names]) => {
        const t = document.querySelector(table); if (!t) return null;
        const heads = [...t.querySelectorAll('thead th')].map(th => th.innerText.replace(/[▲▼↑↓]/g, '').trim());
        const out = {};
        for (const name of names) {
          const i = heads.indexOf(name); if (i < 0) continue;
          out[name] = [...t.querySelectorAll('tbody tr')].map(tr => tr.children[i]?.innerText || '');
        }
        return out;
    }""", [table, list(headers)])


def shown_digits(text: str) -> int:
    m = re.search(r"\.(\d+)", text)
    return len(m.group(1)) if m else 0


def table_matches_download(s, href, table, headers):
    """The table on screen is the download: as many rows as it says, and each figure of each row
    is the download's, as shown (rounded half-up to the digits the page writes)."""
    shown = column_sums(s, table, headers)
    assert shown is not None, f"no table {table}"
    rows = rows_of(s, href)
    total = s.page.locator(table).locator("xpath=ancestor::section[1]//h2//small").first
    if total.count():
        m = re.search(r"of ([\d,]+)", total.inner_text())
        if m:
            assert int(m.group(1).replace(",", "")) == len(rows), (href, total.inner_text(), len(rows))
    checked = []
    for header, column in headers.items():
        if header not in shown or not rows:
            continue
        assert len(shown[header]) == len(rows), (href, header, len(shown[header]), len(rows))
        for i, (text, row) in enumerate(zip(shown[header], rows)):
            if not re.search(r"\d", text):
                assert not row[column] or Decimal(row[column]) == 0, (href, header, i, text, row[column])
                continue
            unit = Decimal(1).scaleb(-shown_digits(text))
            download = Decimal(row[column] or 0).quantize(unit, rounding=ROUND_HALF_UP)
            assert number(text) == download, (href, header, f"row {i + 1}", text, row[column])
        checked.append(header)
    return checked


def idle_figures(s, href):
    return table_matches_download(s, href, "#idle-pods", {
        "Idle GPU-h": "idle_gpu_hours", "Cost": "cost", "Idle cost": "idle_cost"})


def explore_figures(s, href):
    return table_matches_download(s, href, "#explore-rows", {
        "Allocated GPU-h": "allocated_gpu_hours", "Used GPU-h": "used_gpu_hours",
        "Idle GPU-h": "idle_gpu_hours", "Cost": "cost", "Idle cost": "idle_cost"})


def rightsizing_figures(s, href):
    """The headline ("You could save …") is the download's counted savings (docs/advice-and-alerts.md)."""
    headline = s.page.locator("#savings-total b")
    if not headline.count():
        return []
    rows = rows_of(s, href)
    counted = [r for r in rows if r["in_totals"] == "True" and r["monthly_saving"] and Decimal(r["monthly_saving"]) > 0]
    assert number(headline.first.inner_text()) == cents(r["monthly_saving"] for r in counted), href
    return ["savings total"]


def advice_figures(s, href):
    """"Applying all of it: frees …" is the download's money freed by the quotas it lowers."""
    total = s.page.locator(".advice-total")
    if not total.count() or "frees" not in total.inner_text():
        return []
    rows = rows_of(s, href)
    freed = [r["monthly_money_freed"] for r in rows if r["monthly_money_freed"] and Decimal(r["monthly_money_freed"]) > 0]
    assert number(total.locator("b").first.inner_text()) == cents(freed), href
    return ["money freed"]


def statement_figures(s, href):
    """The statement's Total cost is the sum of its lines, in either grouping, and of the FOCUS
    export's billed cost."""
    rows = rows_of(s, href)
    total_row = s.page.locator("#statement-teams tbody tr, #statement-teams tfoot tr").filter(has_text="Total")
    if not total_row.count():
        return []
    heads = [h.strip() for h in s.page.locator("#statement-teams thead th").all_inner_texts()]
    cost = number(total_row.last.locator("td, th").nth(heads.index("Cost")).inner_text())
    column = "BilledCost" if rows and "BilledCost" in rows[0] else "cost"
    assert cost == cents(r[column] for r in rows), (href, cost, cents(r[column] for r in rows))
    return ["statement total"]


# (the page's path, a pattern of its download's href) → the check of its figures
FIGURES = (
    ("/idle/", re.compile(r"^/idle/\?.*format=csv"), idle_figures),
    ("/explore/", re.compile(r"^/explore/\?.*format=csv"), explore_figures),
    ("/advice/rightsizing/", re.compile(r"^/api/v1/rightsizing/\?.*format=csv"), rightsizing_figures),
    ("/advice/", re.compile(r"^/api/v1/quota-recommendations/\?.*format=csv"), advice_figures),
    ("/chargeback/", re.compile(r"^/api/v1/chargeback/(focus/|.*format=csv)"), statement_figures),
)
NOT_FIGURES = re.compile(r"format=xlsx")   # a workbook: its figures are checked in tests/reports


HREFS_JS = """(sel) => [...document.querySelectorAll(sel)].map(a => a.href)
    .filter(h => h.startsWith(location.origin)).map(h => h.slice(location.origin.length))"""


def downloads(s) -> list[str]:
    return sorted({h for h in s.page.evaluate(HREFS_JS, "a[href]") if re.search(r"format=|/focus/|\.csv$", h)})


def check_downloads(s, path):
    problems, checked = [], []
    for href in downloads(s):
        if NOT_FIGURES.search(href):
            continue
        check = next((f for page, pattern, f in FIGURES if path.split("?")[0] == page and pattern.search(href)), None)
        if check is None:
            problems.append(f"{path}: download {href} has no check of its figures in FIGURES")
            continue
        checked += check(s, href)
    return problems, checked


def links(s) -> list[str]:
    return [h for h in s.page.evaluate(HREFS_JS, "a[href]") if not NOT_PAGES.search(h)]


def all_rows(path: str) -> str:
    """The page with every row on one screen where it pages, so its columns add up to the download."""
    parts = urlsplit(path)
    if parts.path not in ("/idle/", "/explore/", "/advice/rightsizing/"):
        return path
    query = dict(parse_qsl(parts.query))
    query["page_size"] = "500"
    return f"{parts.path}?{urlencode(query)}"


def walk(s):
    """(pages visited, figures checked against their downloads, problems found)."""
    s.open("/")
    nav = [h for h in s.page.evaluate(HREFS_JS, "header.top nav a") if not NOT_PAGES.search(h)]
    queue, seen, kinds, problems, visited, checked = list(dict.fromkeys(nav)), set(), set(), [], [], set()
    while queue:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        errors_before = len(s.console_errors)
        response = s.open(all_rows(path))
        visited.append(path)
        status = response.status if response else 0
        if status >= 500 or status == 0:
            problems.append(f"{path}: answered {status}")
            continue
        if status != 200:
            problems.append(f"{path}: answered {status} to a link the portal showed")
            continue
        if path == "/api/v1/docs/":
            s.page.wait_for_selector(".swagger-ui .opblock", timeout=15000)   # drawn after load
        problems += [f"{path}: {c}" for c in s.page.evaluate(CLIPPED_JS)]
        found, figures = check_downloads(s, path)
        problems += found
        checked |= {f"{path.split('?')[0]} {f}" for f in figures}
        problems += [f"{path}: console: {e}" for e in s.console_errors[errors_before:]]
        if path.startswith(("/admin/", "/api/")):
            continue
        for href in links(s):
            for kind, pattern in DETAILS:
                if kind not in kinds and pattern.search(href):
                    kinds.add(kind)
                    queue.append(href)
    return visited, checked, problems


@pytest.fixture
def history(site):
    from tests.support.page_seed import seed_rates, seed_week
    seed_week(days=3)
    seed_rates()
    return site


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("role", ROLES)
def test_every_page_as_each_role(session, history, role, width):
    s = session(role, WIDTHS[width])
    visited, checked, problems = walk(s)
    assert problems == [], "\n".join(problems)
    # what the walk reached and compared: the detail pages, and each download's figures
    assert {"/teams/vision/", "/api/v1/docs/", "/advice/alerts/"} <= set(visited), visited
    hours = {"/explore/ Allocated GPU-h", "/explore/ Idle GPU-h"} | ({"/idle/ Idle GPU-h"} if role != "team_lead" else set())
    money = {"/explore/ Cost", "/chargeback/ statement total"}     # (the lead's team has no idle pod)
    assert hours <= checked and (money <= checked) == (role != "viewer"), sorted(checked)
    if role in ("finance", "admin"):
        assert any(p.startswith("/chargeback/?period=") for p in visited), visited
    if role == "admin":
        assert {"/admin-tools/ingest/", "/admin-tools/claims/", "/admin-tools/rates/"} <= set(visited)


def test_the_walk_sees_a_clipped_column_and_a_wrong_download(session, history):
    """The walk's own checks catch what they are for: a table wider than a phone with no scroller
    around it, a cell whose text overflows its box, and a shown figure that differs from the download."""
    s = session("finance", WIDTHS["phone"])
    s.open("/idle/")
    s.page.evaluate("""() => {
        const t = document.createElement('table'); t.id = 'too-wide';
        t.innerHTML = '<tbody><tr><td style="min-width:900px">wide</td></tr>'
            + '</tbody>';
        const u = document.createElement('table'); u.id = 'fixed'; u.style = 'table-layout:fixed;width:60px';
        u.innerHTML = '<tbody><tr><td style="white-space:nowrap">a long unbreakable cell</td></tr></tbody>';
        document.querySelector('main').prepend(t, u);
    }""")
    found = s.page.evaluate(CLIPPED_JS)
    assert any("too-wide runs" in f for f in found) and any("overflows its box: a long" in f for f in found), found
    s.open("/idle/?page_size=500")
    href = downloads(s)[0]
    s.page.evaluate("() => { const c = document.querySelector('#idle-pods tbody td.num:nth-child(8)'); c.innerText = '999.99'; }")
    with pytest.raises(AssertionError, match="Idle GPU-h"):
        idle_figures(s, href)
