"""The browser harness shared by the Chromium tests: headless Debian Chromium driven by
playwright (never `playwright install`), a live test server with the seed, and a signed-in
session per role that records console errors and every request's host.

Import the fixtures into a test module (`from .browser import browser, session, site`).
"""
import os
from pathlib import Path
from urllib.parse import urlparse

import pytest
from django.db import transaction

# playwright's sync API keeps an event loop in this thread; the ORM calls made by fixtures
# here are plain synchronous ones.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
os.environ.setdefault("DJANGO_LIVE_TEST_SERVER_ADDRESS", "127.0.0.1")

playwright_sync = pytest.importorskip("playwright.sync_api")

from tests.support.factories import PASSWORD  # noqa: E402
from tests.support.page_seed import seed  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parents[2] / "screenshots"
DOCS_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}
CHARTS_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => ({
    traces: (el.data || []).length,
    points: (el.data || []).reduce((n, t) => n + ((t.x || t.z || []).length || 0), 0),
    svg: el.querySelectorAll('.main-svg').length,
    width: el.getBoundingClientRect().width,
    // every trace type the chart uses is one the partial plotly bundle carries (docs/performance.md)
    unbundled: (el.data || []).map(t => t.type || 'scatter')
        .filter(type => !(type in window.Plotly.PlotSchema.get().traces)),
}))"""


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed")
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"])
        yield b
        b.close()


@pytest.fixture
def site(transactional_db, live_server, settings):
    # One commit for the whole seed: each write to a month answer's input recomputes the stored
    # answers once its transaction commits (docs/performance.md, "Recomputed on write"), so
    # seeding row by row in autocommit recomputed them some thirty times; the one recompute at
    # this commit stores the same answers, from the same rows.
    with transaction.atomic():
        data = seed()
    data["url"] = live_server.url
    return data


class Session:
    """One signed-in browser context that records console errors, Content-Security-Policy
    violations and every request's host."""

    def __init__(self, browser, base_url, username, viewport=DESKTOP):
        self.base = base_url
        self.context = browser.new_context(viewport=viewport, accept_downloads=True)
        self.page = self.context.new_page()
        self.console_errors, self.requests, self.csp_violations = [], [], []
        self.page.on("console", lambda m: m.type == "error" and self.console_errors.append(m.text))
        self.page.on("console", lambda m: "Content Security Policy" in m.text and self.csp_violations.append(m.text))
        self.page.on("pageerror", lambda e: self.console_errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(base_url + "/accounts/login/")
        self.page.fill("input[name=username]", username)
        self.page.fill("input[name=password]", PASSWORD)
        self.page.click("form.login button[type=submit]")
        self.page.wait_for_url(base_url + "/")

    def open(self, path):
        response = self.page.goto(self.base + path)
        self.page.wait_for_load_state("load")
        return response

    def charts(self):
        return self.page.evaluate(CHARTS_JS)

    def shot(self, name, full_page=True):
        SHOTS.mkdir(exist_ok=True)
        path = SHOTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        return path

    def foreign_requests(self):
        return [u for u in self.requests if urlparse(u).hostname != "127.0.0.1" and not u.startswith("data:")]

    def close(self):
        self.context.close()


@pytest.fixture
def session(browser, site):
    opened = []

    def sign_in(username, viewport=DESKTOP):
        s = Session(browser, site["url"], username, viewport)
        opened.append(s)
        return s
    yield sign_in
    for s in opened:
        s.close()
