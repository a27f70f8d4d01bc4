"""Who may close or reopen a month is decided by the actions alone (docs/chargeback.md, "Who
may close"): every surface (page, API, Django admin, command line) refuses a user who is not
finance or an admin with the action's own reason, and no view checks a role of its own."""
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.test import Client

from apps.accounting.actions.periods import CLOSE_REFUSED, REOPEN_REFUSED, do_close_period
from apps.accounting.models import BillingPeriod

from tests.support.factories import two_teams_in_march

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def march():
    two_teams_in_march()


def _page_client(user):
    client = Client()
    client.force_login(user)
    return client


def test_close_page_refuses_a_team_lead_with_the_actions_reason(march, team_lead):
    client = _page_client(team_lead)
    for response in (client.get("/chargeback/close/?period=2026-03"),
                     client.post("/chargeback/close/", {"period": "2026-03"})):
        assert response.status_code == 403
        assert CLOSE_REFUSED in response.content.decode()
    assert not BillingPeriod.objects.filter(period="2026-03", closed_at__isnull=False).exists()


def test_close_page_lets_finance_close(march, finance):
    response = _page_client(finance).post("/chargeback/close/", {"period": "2026-03"})
    assert response.status_code == 302 and BillingPeriod.objects.get(period="2026-03").is_closed


def test_api_refuses_close_and_reopen_with_the_actions_reasons(march, api, team_lead, finance):
    refused = api(team_lead).post("/api/v1/chargeback/close/", {"period": "2026-03"}, format="json")
    assert (refused.status_code, refused.json()) == (403, {"detail": CLOSE_REFUSED})
    do_close_period("2026-03", actor=finance)
    refused = api(finance).post("/api/v1/chargeback/reopen/", {"period": "2026-03"}, format="json")
    assert (refused.status_code, refused.json()) == (403, {"detail": REOPEN_REFUSED})
    assert BillingPeriod.objects.get(period="2026-03").is_closed


def test_admin_action_refuses_a_staff_user_who_is_not_finance(march, team_lead):
    """Staff with the model permission still is not finance: the action says so."""
    team_lead.is_staff = True
    team_lead.save()
    team_lead.user_permissions.add(*Permission.objects.filter(codename__in=["view_billingperiod",
                                                                            "change_billingperiod"]))
    bp = BillingPeriod.objects.create(period="2026-03")
    response = _page_client(team_lead).post("/admin/accounting/billingperiod/",
                                            {"action": "close_periods", "_selected_action": [bp.pk]}, follow=True)
    assert f"2026-03: {CLOSE_REFUSED}" in response.content.decode()
    assert not BillingPeriod.objects.get(pk=bp.pk).is_closed


def test_command_refuses_a_named_user_who_is_not_finance(march, team_lead):
    with pytest.raises(CommandError, match=CLOSE_REFUSED):
        call_command("close_period", "2026-03", "--user", "team_lead")
    call_command("close_period", "2026-03")             # the operator at the shell may
    assert BillingPeriod.objects.get(period="2026-03").is_closed


def test_no_view_checks_a_close_role_of_its_own():
    """The rule's only callers are the actions (and access.py, which defines the roles)."""
    callers = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "apps").rglob("*.py")
                     if "can_close_periods" in p.read_text())
    assert callers == ["apps/accounting/actions/periods.py", "apps/teams/access.py"]
    for surface in ("apps/reports/views/chargeback.py", "apps/reports/api/chargeback.py", "apps/accounting/admin.py"):
        text = (ROOT / surface).read_text()
        assert "is_admin(" not in text and "roles_of(" not in text, surface
