"""Issue #43's layout polish in Chromium: the navigation on one line at 1440 px for the roles with
the most links (an admin; a team lead of three teams), the overview's KPI units whole on a phone,
and the team page's Cost and Saving columns on screen at 390 px.

Before: the menu wrapped to two lines at 1440 px for lead and admin, a phone broke "GPU-h" as
"GPU-" / "h", and the team page's money columns lay past the right edge."""
import pytest

from apps.teams.models import Team

from .browser import browser, session, site  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

WIDE = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
TOPS = "() => [...document.querySelectorAll('header.top nav a')].map(a => Math.round(a.getBoundingClientRect().top))"
RIGHT_EDGE = "el => el.getBoundingClientRect().right"


@pytest.mark.parametrize("role", ["admin", "team_lead"])
def test_the_menu_is_one_line_at_1440(session, role):
    if role == "team_lead":
        from django.contrib.auth.models import User
        lead = User.objects.get(username="team_lead")
        for name in ("research", "search"):
            Team.objects.get_or_create(name=name)[0].members.add(lead)
    s = session(role, WIDE)
    s.open("/")
    tops = s.page.evaluate(TOPS)
    widths = s.page.evaluate("() => [document.querySelector('header.top nav').clientWidth, document.querySelector('header.top .logout').clientWidth, ...[...document.querySelectorAll('header.top nav a')].map(a => Math.round(a.getBoundingClientRect().width))]")
    assert len(tops) >= 13 and len(set(tops)) == 1, (tops, widths, sum(widths[2:]))
    assert s.console_errors == []


def test_on_a_phone_units_stay_whole_and_money_columns_on_screen(session):
    s = session("team_lead", PHONE)
    s.open("/")
    for unit in s.page.locator(".kpis .unit").all():
        box = unit.bounding_box()
        assert box["height"] < 30, unit.inner_text()      # one line of text, never "GPU-" / "h"
    s.open("/teams/vision/")
    cost = s.page.locator("#costs tbody tr").first.locator("td.cost")
    assert cost.evaluate(RIGHT_EDGE) <= PHONE["width"], cost.inner_text()
    assert s.page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    assert s.console_errors == []


def test_the_fleet_by_model_table_is_whole_at_1440(session):
    """Before: beside its chart, the table's Efficiency lay past the edge of its half of the page."""
    from tests.support.page_seed import seed_rates
    seed_rates()
    s = session("admin", WIDE)
    s.open("/")
    box = s.page.locator("#models").evaluate("t => [t.parentElement.scrollWidth, t.parentElement.clientWidth]")
    assert box[0] <= box[1], box
    assert s.page.locator("#models thead th").last.inner_text() == "Efficiency"
