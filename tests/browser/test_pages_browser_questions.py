"""#14's page defects in Chromium, at desktop and phone widths (390 × 844).

- Phone: the navigation collapses behind a Menu button that opens it (static/js/portal.js, no
  inline script under the Content-Security-Policy) and its links work; no page scrolls
  sideways (tables scroll inside themselves), charts fit the screen; not one CSP violation.
- The explorer's own default window, asked for hourly rows, answers with rows; a window too
  long for hours switches to days with a note (it answered 400).
- Date presets set the window, and the page shows it in the billing zone.
- Closing is not offered for the month still running.
- The Idle GPUs list pages on the server.
- Screenshots of each role's main page at both widths; UPDATE_DOCS_SCREENSHOTS=1 copies them
  to docs/screenshots/ (docs/pages.md shows them).
"""
import os
import re
from datetime import timedelta

import pytest

from django.utils import timezone

from .browser import DESKTOP, DOCS_SHOTS, PHONE, browser, session, site  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

PHONE_PAGES = {
    "admin": ["/", "/teams/vision/", "/explore/", "/idle/", "/health/", "/admin-tools/ingest/", "/chargeback/",
              "/advice/", "/advice/alerts/", "/no-such-page/"],
    "finance": ["/", "/explore/?grain=hour", "/chargeback/", "/chargeback/close/?period=2026-01"],
    "team_lead": ["/", "/teams/vision/", "/idle/", "/health/", "/advice/", "/teams/nlp/"],
    "viewer": ["/", "/explore/", "/idle/"],
}
MAIN_PAGE = {"admin": "/", "finance": "/chargeback/", "team_lead": "/teams/vision/", "viewer": "/"}
OVERFLOW_JS = "() => [document.documentElement.scrollWidth, window.innerWidth]"


def no_sideways_scroll(s, path):
    scroll_width, inner_width = s.page.evaluate(OVERFLOW_JS)
    assert scroll_width <= inner_width, f"{path}: the page is {scroll_width} px wide on a {inner_width} px screen"


@pytest.mark.parametrize("role", list(PHONE_PAGES))
def test_phone_pages_fit_the_screen_and_keep_the_policy(session, role):
    s = session(role, PHONE)
    for path in PHONE_PAGES[role]:
        response = s.open(path)
        assert response.status in (200, 403, 404), path
        if response.status != 200:     # the browser logs the error page's own status
            expected = f"the server responded with a status of {response.status}"
            s.console_errors[:] = [e for e in s.console_errors if expected not in e]
        no_sideways_scroll(s, path)
        for chart in s.charts():
            assert chart["svg"] > 0 and 0 < chart["width"] <= PHONE["width"], (path, chart)
        s.shot(f"phone-{role}-{path.strip('/').replace('/', '-').split('?')[0] or 'overview'}")
    assert s.csp_violations == [] and s.console_errors == [] and s.foreign_requests() == []


def test_desktop_pages_do_not_scroll_sideways_either(session):
    s = session("finance", DESKTOP)
    for path in ["/", "/explore/", "/idle/", "/chargeback/", "/advice/", "/chargeback/close/?period=2026-01"]:
        assert s.open(path).status == 200, path
        no_sideways_scroll(s, path)
    assert s.csp_violations == [] and s.console_errors == []


def test_the_phone_menu_opens_and_its_links_work(session):
    s = session("finance", PHONE)
    s.open("/")
    toggle = s.page.locator("header .menu-toggle")
    assert toggle.is_visible() and toggle.get_attribute("aria-expanded") == "false"
    idle_link = s.page.locator("header nav a", has_text="Idle GPUs")
    assert not idle_link.is_visible()
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    assert idle_link.is_visible() and s.page.locator("header nav a", has_text="Chargeback").is_visible()
    assert s.page.locator("header .logout button").is_visible()
    box = idle_link.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    idle_link.click()
    s.page.wait_for_load_state("load")
    assert s.page.url.split("?")[0].endswith("/idle/")
    assert s.page.locator("#idle-pods").is_visible()
    # the wide table scrolls inside itself, the page does not
    assert s.page.evaluate("() => { const t = document.querySelector('#idle-pods'); "
                           "return t.scrollWidth > t.clientWidth && getComputedStyle(t).overflowX === 'auto'; }")
    no_sideways_scroll(s, "/idle/")
    assert s.csp_violations == [] and s.console_errors == []


def test_on_a_desktop_the_menu_is_simply_there(session):
    s = session("viewer", DESKTOP)
    s.open("/")
    assert not s.page.locator("header .menu-toggle").is_visible()
    assert s.page.locator("header nav a", has_text="Explorer").is_visible()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_explorer_hourly_over_its_own_window_and_over_a_long_one(session, viewport):
    s = session("admin", viewport)
    s.open("/explore/")
    s.page.select_option("form.picker select[name=grain]", "hour")
    with s.page.expect_navigation():
        s.page.click("form.picker button[type=submit]")
    assert "grain=hour" in s.page.url
    assert s.page.locator("#grain-note").count() == 0
    assert re.search(r"\d\d:\d\d$", s.page.locator("#explore-rows tbody tr td").first.inner_text())
    # "Last 30 days" keeps grain=hour: too long for hours, so days with a note, not a 400
    if viewport is PHONE:
        no_sideways_scroll(s, "/explore/?grain=hour")
    response = s.page.locator("form.picker nav.presets a", has_text="Last 30 days")
    with s.page.expect_navigation() as nav:
        response.click()
    assert nav.value.status == 200
    assert "Hourly rows cover at most 7 days" in s.page.locator("#grain-note").inner_text()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", s.page.locator("#explore-rows tbody tr td").first.inner_text())
    assert s.csp_violations == [] and s.console_errors == []


def test_presets_set_the_window_shown_in_the_billing_zone(session):
    s = session("finance")
    s.open("/")
    today = timezone.now().date()
    first = today.replace(day=1)
    last_first = (first - timedelta(days=1)).replace(day=1)
    with s.page.expect_navigation():
        s.page.click("form.picker nav.presets a:has-text('Last month')")
    assert f"start={last_first}" in s.page.url and f"end={first}" in s.page.url
    assert s.page.locator("form.picker input[name=start]").input_value() == last_first.isoformat()
    assert s.page.locator("form.picker input[name=end]").input_value() == first.isoformat()
    assert s.page.locator("#picker-window").inner_text() == \
        f"Window shown: {last_first} 00:00 UTC – {first} 00:00 UTC ({(first - last_first).days} days)"
    assert s.page.locator("form.picker nav.presets a[aria-current]").inner_text() == "Last month"


def test_the_running_month_offers_no_close(session):
    s = session("finance")
    period = f"{timezone.now():%Y-%m}"
    s.open(f"/chargeback/?period={period}")
    assert s.page.locator("a", has_text=f"Close {period}").count() == 0
    assert "is still running: it can be closed from" in s.page.locator("#period-state").inner_text()


def test_idle_list_pages_on_the_server(session, site):
    from tests.support.page_seed import usage

    gpu0, gpu1, _ = site["devices"]
    for i in range(30):
        usage(gpu1, "nlp-dev", f"nb-{i:02d}", 14 + i % 8, 3600, 0, 3600, idle_max_run_seconds=3600 - i)
    s = session("admin")
    s.open("/idle/?page_size=10")
    assert s.page.locator("#idle-pods tbody tr").count() == 10
    assert s.page.locator("#page-number").inner_text() == "page 1 of 4"
    with s.page.expect_navigation():
        s.page.click("nav.pages a[rel=next]")
    assert "page=2" in s.page.url and "page_size=10" in s.page.url
    assert s.page.locator("#page-number").inner_text() == "page 2 of 4"
    with s.page.expect_navigation():
        s.page.click("#idle-pods thead a:has-text('Pod')")
    assert "sort=pod" in s.page.url and "page=" not in s.page.url
    assert s.page.locator("#idle-pods tbody tr td").first.inner_text() == "nb-00"


@pytest.mark.parametrize("role", list(MAIN_PAGE))
def test_screenshots_of_each_roles_main_page(session, site, role):
    """Small PNGs (the visible screen, not the whole page) for docs/pages.md, of a priced week."""
    from tests.support.page_seed import seed_rates, seed_week

    seed_week()
    seed_rates()
    for name, viewport in (("desktop", {"width": 1280, "height": 800}), ("phone", PHONE)):
        s = session(role, viewport)
        assert s.open(MAIN_PAGE[role]).status == 200
        shot = s.shot(f"main-{role}-{name}", full_page=False)
        if os.environ.get("UPDATE_DOCS_SCREENSHOTS") == "1":
            DOCS_SHOTS.mkdir(exist_ok=True)
            (DOCS_SHOTS / f"{role}-{name}.png").write_bytes(shot.read_bytes())
        assert s.csp_violations == [] and s.console_errors == []
