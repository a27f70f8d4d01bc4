"""Issue #26 ("pages with no rough edges") in Chromium: each defect as a role met it.

Each test failed before its fix; the view-level halves live beside the code they test
(tests/advice/test_advice_one_story.py and friends).
"""
import pytest

from .browser import browser, session, site  # noqa: F401  (fixtures)

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
