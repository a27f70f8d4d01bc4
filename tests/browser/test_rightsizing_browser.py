"""The right-sizing page in headless Chromium, desktop and phone, as a team lead: what it says,
that a phone needs no sideways scrolling, and the screenshots of docs/advice-and-alerts.md
(written to docs/screenshots/ when UPDATE_DOCS_SCREENSHOTS=1)."""
import os

from django.contrib.auth.models import User

from tests.recommendations import rightsizing_fleet

from .browser import DOCS_SHOTS, PHONE, browser, session, site  # noqa: F401  (fixtures)

WIDTH_JS = "() => document.documentElement.scrollWidth"


def test_the_leads_rightsizing_page_on_desktop_and_phone(session, site):
    rightsizing_fleet.rates()
    _, teams = rightsizing_fleet.build()
    lead = User.objects.get(username="team_lead")
    for name in ("search", "research"):
        teams[name].members.add(lead)
    for name, viewport in (("desktop", {"width": 1280, "height": 800}), ("phone", PHONE)):
        s = session("team_lead", viewport)
        assert s.open("/advice/rightsizing/").status == 200
        total = s.page.locator("#savings-total").inner_text()
        # vision 2,502.86 + 2,482.00, search 584.00 + 383.25, research 511.00
        assert "€6,463.11" in total, total
        first = s.page.locator("#rightsizing tbody tr").first.inner_text()
        assert "peaky" in first and "1g.20gb" in first
        if name == "phone":
            assert s.page.evaluate(WIDTH_JS) <= PHONE["width"], "the phone page scrolls sideways"
        shot = s.shot(f"rightsizing-{name}", full_page=name == "desktop")   # a phone: its first screen
        if os.environ.get("UPDATE_DOCS_SCREENSHOTS") == "1":
            DOCS_SHOTS.mkdir(exist_ok=True)
            (DOCS_SHOTS / f"rightsizing-{name}.png").write_bytes(shot.read_bytes())
        assert s.csp_violations == [] and s.console_errors == [] and s.foreign_requests() == []
