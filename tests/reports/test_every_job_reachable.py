"""Every job reachable from the portal (#43, item 4): the FOCUS export beside the other downloads
on the chargeback page, reopening a closed month as a button for admins there (through the
audited action, with a reason), Alerts in the menu, and the rate card in force on the Rates page.

Before: FOCUS was linked nowhere, reopening was a Django admin action only (the same list
offered "Delete selected billing periods"), Alerts was not in the navigation and the Rates page
showed no rate at all.

Team research, namespace llm on prod, one H100 at 2.00 USD per GPU-hour: 10 hours on 10
October; October closed by finance.
"""
import html
import re
from datetime import date
from decimal import Decimal

import pytest

from apps.accounting.actions.periods import do_close_period
from apps.accounting.models import Rate
from apps.teams.models import AuditEvent
from apps.accounting.models.periods import BillingPeriod

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_usage, utc

pytestmark = pytest.mark.django_db


@pytest.fixture
def closed_october(finance):
    prod = make_cluster()
    make_namespace(prod, "llm", "research")
    make_rate(hourly_rate="2.00")
    make_usage(make_device(prod), "llm", utc(2026, 10, 10, 8), hours=10)
    do_close_period("2026-10", actor=finance)
    return prod


def nav(body):
    return re.findall(r'<a href="([^"]*)"[^>]*>([^<]+)</a>', body[body.index('id="site-menu"'):body.index("</nav>")])


def test_the_focus_export_is_beside_the_other_downloads(closed_october, finance, client):
    client.force_login(finance)
    page = client.get("/chargeback/", {"period": "2026-10"}).content.decode()
    downloads = page[page.index('id="downloads"'):page.index("</p>", page.index('id="downloads"'))]
    link = re.search(r'href="([^"]+)" id="focus-link"', downloads).group(1)
    assert link == "/api/v1/chargeback/focus/?period=2026-10"
    response = client.get(link)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")


def test_an_admin_reopens_a_month_from_its_page_with_a_reason(closed_october, admin_user, finance, client):
    client.force_login(finance)
    assert 'id="reopen-form"' not in client.get("/chargeback/", {"period": "2026-10"}).content.decode()
    assert client.post("/chargeback/reopen/", {"period": "2026-10", "reason": "x"}).status_code == 403
    client.force_login(admin_user)
    page = client.get("/chargeback/", {"period": "2026-10"}).content.decode()
    assert 'id="reopen-form"' in page and "Reopen 2026-10</button>" in page
    # a reason is required
    assert client.post("/chargeback/reopen/", {"period": "2026-10", "reason": " "}).status_code == 400
    assert BillingPeriod.objects.get(period="2026-10").is_closed
    response = client.post("/chargeback/reopen/", {"period": "2026-10", "reason": "rates of October were wrong"})
    assert response.status_code == 302 and response["Location"] == "/chargeback/?period=2026-10"
    assert not BillingPeriod.objects.get(period="2026-10").is_closed
    event = AuditEvent.objects.get(action="period.reopen")
    assert event.actor == admin_user and event.new_value == {"closed": False, "reason": "rates of October were wrong"}
    assert 'id="reopen-form"' not in client.get("/chargeback/", {"period": "2026-10"}).content.decode()


def test_the_billing_period_admin_offers_no_bulk_delete(closed_october, client):
    from tests.support.factories import make_user
    client.force_login(make_user("root", superuser=True, staff=True))
    page = client.get("/admin/accounting/billingperiod/").content.decode()
    assert "Reopen the selected periods" in page and "delete_selected" not in page


@pytest.mark.parametrize("role", ["admin_user", "finance", "team_lead", "viewer"])
def test_alerts_are_in_the_menu(closed_october, role, request, client):
    client.force_login(request.getfixturevalue(role))
    links = dict(nav(client.get("/account/tokens/").content.decode()))
    assert links.get("/advice/alerts/") == "Alerts"


def test_the_rates_page_shows_the_rate_card_in_force(closed_october, admin_user, client):
    Rate.objects.create(gpu_model="NVIDIA H100 80GB HBM3", hourly_rate=Decimal("2.50"), currency="USD",
                        effective_from=date(2099, 1, 1))
    client.force_login(admin_user)
    page = client.get("/admin-tools/rates/").content.decode()
    card = page[page.index('id="rate-card"'):page.index("</table>", page.index('id="rate-card"'))]
    rows = [re.sub(r"<[^>]+>", "|", tr) for tr in re.findall(r"<tr>(.*?)</tr>", card, re.S)[1:]]
    assert len(rows) == 1 and "$2.00" in rows[0] and "whole GPU" in rows[0] and "on_demand" in rows[0]
    later = page[page.index('id="rate-card-upcoming"'):]
    assert "$2.50" in later and "2099-01-01" in later


def test_a_month_before_the_history_offers_no_close_and_a_future_month_has_not_begun(closed_october, finance,
                                                                                     client):
    from apps.ingest.models import IngestRun
    # the fleet's first ingest run read October on: September ends before the history begins
    IngestRun.objects.create(cluster=closed_october, window_start=utc(2026, 10, 1), window_end=utc(2026, 10, 11),
                             status=IngestRun.Status.SUCCEEDED)
    client.force_login(finance)
    assert "Close 2026-10" not in client.get("/chargeback/", {"period": "2026-10"}).content.decode()   # closed
    september = html.unescape(client.get("/chargeback/", {"period": "2026-09"}).content.decode())
    assert "Close 2026-09" not in september
    assert re.search(r'id="cannot-close">2026-09 ends before the fleet\'s history begins', september)
    future = client.get("/chargeback/", {"period": "2099-01"}).content.decode()
    assert "2099-01 has not begun: it can be closed from" in future and "still running" not in future


def test_the_api_docs_lead_back_to_the_portal_and_a_new_key_can_be_copied(closed_october, finance, client):
    client.force_login(finance)
    docs = client.get("/api/v1/docs/").content.decode()
    assert '<a href="/" style="color:#fff">← gpuportal</a>' in docs and 'id="swagger-ui"' in docs
    made = client.post("/account/tokens/", {"name": "ci", "days": "30", "scope": "read_only"}, follow=True)
    page = made.content.decode()
    if 'id="new-token-key"' in page:
        assert 'data-copy="new-token-key">Copy key</button>' in page
    else:   # the form's own field names: shown on the page
        pytest.fail("no token made: " + re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))[:400])


def test_the_total_row_has_the_gpu_hours(closed_october, finance, client):
    """#43 P3: the chargeback Total row had money only. October: 10 H100 hours, half used."""
    client.force_login(finance)
    page = client.get("/chargeback/", {"period": "2026-10"}).content.decode()
    foot = page[page.index("<tfoot>"):page.index("</tfoot>")]
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", foot, re.S)]
    assert cells == ["Total", "$20.00", "–", "10.00", "5.00", "50.0 %", "0.00"]
