"""Issue #26 ("pages with no rough edges") in Chromium: each defect as a role met it.

Each test failed before its fix; the view-level halves live beside the code they test
(tests/recommendations/test_advice_one_story.py and friends).
"""
import os

import pytest

from .browser import DOCS_SHOTS, browser, session, site  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

LAPTOP = {"width": 1366, "height": 768}


def test_advice_yaml_is_readable_and_copyable_on_a_laptop(session):
    s = session("admin", LAPTOP)
    s.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=s.base)
    s.open("/advice/")
    s.page.locator("tr.yaml summary").first.click()
    pre = s.page.locator("tr.yaml pre.yaml").first
    s.shot("advice-laptop")
    box = pre.bounding_box()
    assert box["width"] > 0 and box["x"] + box["width"] <= LAPTOP["width"], box
    # no line of it is cut off: the text fits its box, and nothing scrolls sideways
    assert pre.evaluate("el => el.scrollWidth <= el.clientWidth")
    assert s.page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    s.page.locator("tr.yaml button.copy").first.click()
    s.page.wait_for_function("() => document.querySelector('tr.yaml button.copy').textContent === 'Copied'")
    copied = s.page.evaluate("() => navigator.clipboard.readText()")
    assert copied.startswith("apiVersion: v1\nkind: ResourceQuota\n") and "namespace: cv-train" in copied
    assert s.console_errors == [] and s.foreign_requests() == []


PHONE = {"width": 390, "height": 844}
RIGHT_EDGE = "el => el.getBoundingClientRect().right"


def test_on_a_phone_the_column_a_table_is_read_for_is_on_screen(session):
    # Before: at 390 px the chargeback's Cost and the advice's Verdict lay past the right edge,
    # reachable only by scrolling the table sideways.
    finance = session("finance", PHONE)
    finance.open("/chargeback/")
    cost = finance.page.locator("#statement-teams tbody tr").first.locator("td.cost")
    assert cost.evaluate(RIGHT_EDGE) <= PHONE["width"], cost.inner_text()
    assert finance.page.locator("#statement-teams thead th").nth(1).inner_text() == "Cost"
    finance.shot("finance-chargeback-phone", full_page=False)
    admin = session("admin", PHONE)
    admin.open("/advice/")
    verdict = admin.page.locator("table.advice td.verdict").first
    admin.shot("admin-advice-phone", full_page=False)
    assert verdict.evaluate(RIGHT_EDGE) <= PHONE["width"], verdict.inner_text()
    for s in (finance, admin):
        assert s.console_errors == [] and s.page.evaluate("() => document.documentElement.scrollWidth") <= 390


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE])
def test_the_token_page_is_in_the_menu(session, viewport):
    # Before: reachable only by clicking the grey user name at the top right.
    s = session("viewer", viewport)
    s.open("/")
    if viewport is PHONE:
        s.page.click("header.top .menu-toggle")
    s.page.locator("header nav a", has_text="API tokens").click()
    s.page.wait_for_url(s.base + "/account/tokens/")
    assert s.page.locator("header nav a[aria-current=page]").inner_text() == "API tokens"
    assert s.console_errors == []


def test_the_leads_advice_page_on_desktop_and_phone(session):
    """The lead's quota advice, as docs/advice-and-alerts.md shows it (written to docs/screenshots/
    when UPDATE_DOCS_SCREENSHOTS=1): verdicts on screen on both, no sideways scrolling on a phone."""
    for name, viewport in (("desktop", LAPTOP), ("phone", PHONE)):
        s = session("team_lead", viewport)
        assert s.open("/advice/").status == 200
        verdicts = s.page.locator("table.advice td.verdict")
        assert verdicts.count() > 0
        assert verdicts.first.evaluate(RIGHT_EDGE) <= viewport["width"], name
        shot = s.shot(f"team_lead-advice-{name}", full_page=False)
        if os.environ.get("UPDATE_DOCS_SCREENSHOTS") == "1":
            DOCS_SHOTS.mkdir(exist_ok=True)
            (DOCS_SHOTS / f"team_lead-advice-{name}.png").write_bytes(shot.read_bytes())
        assert s.console_errors == [] and s.csp_violations == []
        assert s.page.evaluate("() => document.documentElement.scrollWidth") <= viewport["width"]


def test_every_day_chart_labels_its_last_day(session):
    """The overview's stacked GPU-hours chart drew its last day at the very edge of the plot,
    where the browser hid that day's label (the efficiency chart beside it showed it)."""
    from tests.support.page_seed import seed_rates, seed_week
    seed_week()
    seed_rates()
    s = session("admin")
    assert s.open("/").status == 200
    charts = s.page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => ({
        ticks: (el.layout.xaxis || {}).ticktext || [],
        visible: Array.from(el.querySelectorAll('.xtick text')).filter(t => t.getBBox().width > 0
            && t.getAttribute('display') !== 'none' && t.style.display !== 'none').map(t => t.textContent)}))""")
    day_charts = [c for c in charts if c["ticks"]]
    assert len(day_charts) >= 2
    for chart in day_charts:
        assert chart["ticks"][-1] in chart["visible"], chart
