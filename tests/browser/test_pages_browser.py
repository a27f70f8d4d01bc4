"""The pages in a real browser: headless Debian Chromium driven by playwright, against live_server.

Each role signs in through the login form and opens every page it may see; charts must render
with data, the console stay clean, and no request may leave 127.0.0.1 (the portal runs
air-gapped). Screenshots land in screenshots/ (git-ignored) for review.
"""
import csv
import os

import pytest

from .browser import SHOTS, browser, session, site  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

ROLE_PAGES = {
    "admin": ["/", "/teams/vision/", "/teams/nlp/", "/explore/", "/idle/", "/health/", "/admin-tools/ingest/"],
    "finance": ["/", "/teams/nlp/", "/explore/", "/idle/", "/health/"],
    "team_lead": ["/", "/teams/vision/", "/explore/", "/idle/", "/health/"],
    "viewer": ["/", "/teams/vision/", "/explore/", "/idle/", "/health/"],
}
# The ingest log is tables only; vision's pods are busy, so its lead has no idle pod to chart.
PAGES_WITHOUT_CHARTS = {("admin", "/admin-tools/ingest/"), ("team_lead", "/idle/")}


def slug(path):
    return path.strip("/").replace("/", "-") or "overview"


@pytest.mark.parametrize("role", list(ROLE_PAGES))
def test_each_role_sees_its_pages_with_charts_and_no_foreign_requests(session, role):
    s = session(role)
    for path in ROLE_PAGES[role]:
        response = s.open(path)
        assert response.status == 200, path
        charts = s.charts()
        assert charts or (role, path) in PAGES_WITHOUT_CHARTS, f"{path}: no plotly chart rendered"
        assert all(c["traces"] > 0 and c["points"] > 0 and c["svg"] > 0 for c in charts), (path, charts)
        assert all(c["unbundled"] == [] for c in charts), (path, charts)
        s.shot(f"{role}-{slug(path)}")
    assert s.console_errors == []
    assert s.foreign_requests() == []
    assert any(u.endswith("/static/js/plotly-cartesian.min.js") for u in s.requests)


def test_roles_see_what_they_should(session):
    viewer = session("viewer")
    viewer.open("/teams/vision/")
    assert viewer.page.locator("#costs").count() == 0 and "Cost: this month" not in viewer.page.content()
    assert viewer.page.locator("header nav a", has_text="Chargeback").count() == 0
    assert viewer.page.locator("header nav a", has_text="Ingest log").count() == 0

    lead = session("team_lead")
    lead.open("/")
    assert lead.page.locator("header nav a", has_text="Team vision").count() == 1
    assert lead.page.locator("header nav a[href='/chargeback/']").count() == 1
    lead.open("/idle/")
    assert "notebook-0" not in lead.page.content()
    assert lead.page.locator("#unallocated").count() == 0

    finance = session("finance")
    finance.open("/idle/")
    assert finance.page.locator("#idle-pods tbody tr").first.locator("td").first.inner_text() == "notebook-0"
    assert finance.page.locator("#unallocated").count() == 1

    admin = session("admin")
    admin.open("/")
    assert "Stale data" in admin.page.locator(".stale-warning").inner_text()
    admin.open("/admin-tools/ingest/")
    assert "connection refused" in admin.page.locator("#runs").inner_text()
    admin.shot("admin-ingest-log")
    for s in (viewer, lead, finance, admin):
        assert s.console_errors == [] and s.foreign_requests() == []


def test_team_lead_is_refused_other_teams_pages_api_and_csv(session):
    lead = session("team_lead")
    assert lead.open("/teams/nlp/").status == 403
    assert lead.open("/explore/?team=nlp").status == 403
    for url in ["/api/v1/idle/?team=nlp", "/api/v1/idle/?team=nlp&format=csv", "/explore/?team=nlp&format=csv"]:
        assert lead.context.request.get(lead.base + url).status in (403, 404), url
    ingest = lead.open("/admin-tools/ingest/")
    assert ingest.status == 403


def test_picker_carries_the_selection_in_the_url(session):
    s = session("admin")
    s.open("/")
    s.page.select_option("form.picker select[name=team]", "vision")
    s.page.click("form.picker button[type=submit]")
    s.page.wait_for_load_state("load")
    assert "team=vision" in s.page.url
    s.page.click("header nav a:has-text('Explorer')")
    s.page.wait_for_load_state("load")
    assert "/explore/" in s.page.url and "team=vision" in s.page.url
    teams = {t.inner_text() for t in s.page.locator("#explore-rows tbody tr td:nth-child(3)").all()}
    assert teams == {"vision"}


def test_explorer_csv_downloads_exactly_the_rows_shown(session, tmp_path):
    s = session("finance")
    s.open("/explore/?team=vision")
    shown = s.page.locator("#explore-rows tbody tr").count()
    with s.page.expect_download() as info:
        s.page.click("#csv-link")
    target = tmp_path / "rows.csv"
    info.value.save_as(target)
    rows = list(csv.DictReader(target.open()))
    assert len(rows) == shown == 2
    assert {r["namespace"] for r in rows} == {"cv-train"}
    assert sorted(r["efficiency"] for r in rows) == ["0.5", "0.625"]
    assert info.value.suggested_filename.startswith("utilization_")
    idle_csv = s.context.request.get(s.base + "/api/v1/idle/?format=csv")
    assert idle_csv.status == 200 and idle_csv.text().startswith("cluster,namespace,pod")
    # the Idle GPUs page's download is its own list, named after it, with its costs (#43)
    s.open("/idle/")
    listed = s.page.locator("#idle-pods tbody tr").count()
    with s.page.expect_download() as info:
        s.page.click("#csv-link")
    assert info.value.suggested_filename.startswith("idle-gpus_")
    info.value.save_as(tmp_path / "idle.csv")
    idle_rows = list(csv.DictReader((tmp_path / "idle.csv").open()))
    assert len(idle_rows) == listed and "idle_cost" in idle_rows[0]
    assert s.console_errors == [] and s.foreign_requests() == []


def test_overview_screenshot_for_the_readme(session, site):
    """A priced week of data, shot for docs/overview.png (copied there when UPDATE_DOCS_SCREENSHOT=1)."""
    from tests.support.page_seed import seed_rates, seed_week
    seed_week()
    seed_rates()
    s = session("admin")
    for path in ["/", "/teams/vision/", "/explore/", "/idle/", "/health/"]:
        assert s.open(path).status == 200
        assert all(c["points"] > 0 for c in s.charts())
        s.shot(f"week-{slug(path)}")
    s.open("/")
    s.page.screenshot(path=str(SHOTS / "readme-overview.png"), full_page=True)
    assert s.console_errors == [] and s.foreign_requests() == []
    if os.environ.get("UPDATE_DOCS_SCREENSHOT") == "1":
        docs = SHOTS.parent / "docs"
        docs.mkdir(exist_ok=True)
        (docs / "overview.png").write_bytes((SHOTS / "readme-overview.png").read_bytes())


CSP_PAGES = ["/", "/chargeback/", "/advice/", "/advice/alerts/", "/api/v1/docs/", "/api/v1/redoc/",
             "/admin/", "/admin/clusters/cluster/"]


def test_the_content_security_policy_holds_on_every_page(session):
    """Pages run under the policy (no inline script, no eval, no framing) with not one
    violation in the console, and the pages that draw still draw: charts, Swagger UI, ReDoc."""
    s = session("admin")
    violations, current = [], [""]
    s.page.on("console", lambda m: "Content Security Policy" in m.text and violations.append((current[0], m.text)))
    for path in CSP_PAGES:
        current[0] = path
        response = s.open(path)
        assert response.status == 200, path
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy, path
        assert "unsafe-inline" not in policy.split("script-src", 1)[1].split(";", 1)[0], path
        if path == "/":
            assert s.charts() and all(c["svg"] > 0 for c in s.charts())
        if path == "/api/v1/docs/":
            s.page.wait_for_selector(".swagger-ui .opblock", timeout=15000)
        if path == "/api/v1/redoc/":
            s.page.wait_for_selector("[role=navigation], .api-content", timeout=15000)
    # Not one violation: ReDoc's footer logo used to come from cdn.redoc.ly (blocked by the
    # policy); the bundle is now served with it pointed at the portal's own favicon (#26).
    assert violations == [] and s.console_errors == []
    assert [u for u in s.foreign_requests() if not u.startswith("blob:")] == []   # ReDoc's worker is a blob:
