"""Admin pages: rate changes and period closes go through the audited actions."""
import pytest
from django.test import Client

from apps.accounting.models import BillingPeriod, Rate
from apps.teams.models import AuditEvent

from .factories import H100, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def site_admin(db):
    user = make_user("admin", "admin", superuser=True)
    user.is_staff = True
    user.save()
    c = Client()
    c.force_login(user)
    return c


def test_rate_added_in_admin_is_audited(site_admin):
    response = site_admin.post("/admin/accounting/rate/add/", {
        "gpu_model": H100, "mig_profile": "", "price_class": "on_demand", "hourly_rate": "2.50",
        "currency": "USD", "effective_from": "2026-01-01"})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Rate.objects.get().hourly_rate == 2.5
    assert AuditEvent.objects.get(action="rate.create").new_value["currency"] == "USD"
    bad = site_admin.post("/admin/accounting/rate/add/", {
        "gpu_model": H100, "mig_profile": "", "price_class": "on_demand", "hourly_rate": "-1",
        "currency": "XYZ", "effective_from": "2026-02-01"})
    assert bad.status_code == 200 and b"ISO 4217" in bad.content and Rate.objects.count() == 1


def test_period_closed_and_reopened_from_admin(site_admin):
    site_admin.post("/admin/accounting/billingperiod/add/", {"period": "2026-03"})
    bp = BillingPeriod.objects.get(period="2026-03")
    site_admin.post("/admin/accounting/billingperiod/", {"action": "close_periods", "_selected_action": [bp.pk]})
    assert BillingPeriod.objects.get(pk=bp.pk).is_closed
    site_admin.post("/admin/accounting/billingperiod/", {"action": "reopen_periods", "_selected_action": [bp.pk]})
    assert not BillingPeriod.objects.get(pk=bp.pk).is_closed
    assert [e.action for e in AuditEvent.objects.order_by("at")] == ["period.close", "period.reopen"]
