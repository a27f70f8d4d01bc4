"""Admin pages: rate changes and period closes go through the audited actions."""
import pytest
from django.test import Client

from apps.accounting.models import BillingPeriod, Rate
from apps.teams.models import AuditEvent

from tests.support.factories import H100, make_user

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
    from tests.support.factories import make_cluster, make_device, make_usage, utc

    make_usage(make_device(make_cluster()), "", utc(2026, 3, 1))      # the fleet's history begins
    site_admin.post("/admin/accounting/billingperiod/add/", {"period": "2026-03"})
    bp = BillingPeriod.objects.get(period="2026-03")
    site_admin.post("/admin/accounting/billingperiod/", {"action": "close_periods", "_selected_action": [bp.pk]})
    assert BillingPeriod.objects.get(pk=bp.pk).is_closed
    site_admin.post("/admin/accounting/billingperiod/", {"action": "reopen_periods", "_selected_action": [bp.pk]})
    assert not BillingPeriod.objects.get(pk=bp.pk).is_closed
    assert [e.action for e in AuditEvent.objects.order_by("at")] == ["period.close", "period.reopen"]


@pytest.fixture
def closed_march(site_admin):
    """March closed with one hour of usage, priced with the rate card as it stands."""
    from apps.accounting.actions.periods import do_close_period

    from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_usage, utc

    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00")
    make_usage(make_device(prod), "ml", utc(2026, 3, 10), hours=1)
    return do_close_period("2026-03")


def test_a_closed_period_is_read_only_in_the_admin(site_admin, closed_march):
    """Changing a closed period's rate-card version (or any field) would change what its
    statement says it was priced with; the admin shows it and changes nothing."""
    bp = closed_march
    version, changed_at, closed_at = bp.rate_card_version, bp.rate_card_changed_at, bp.closed_at
    assert version is not None

    page = site_admin.get(f"/admin/accounting/billingperiod/{bp.pk}/change/")
    assert page.status_code == 200
    body = page.content.decode()
    assert 'name="rate_card_version"' not in body and 'name="rate_card_changed_at_0"' not in body
    assert 'name="_save"' not in body                           # no save button: a view, not a form

    posted = site_admin.post(f"/admin/accounting/billingperiod/{bp.pk}/change/", {
        "rate_card_version": "1", "rate_card_changed_at_0": "2020-01-01", "rate_card_changed_at_1": "00:00:00",
        "billing_timezone": "Asia/Tokyo"})
    assert posted.status_code == 403
    bp.refresh_from_db()
    assert (bp.rate_card_version, bp.rate_card_changed_at, bp.closed_at, bp.billing_timezone) == \
        (version, changed_at, closed_at, "UTC")

    assert site_admin.post(f"/admin/accounting/billingperiod/{bp.pk}/delete/", {"post": "yes"}).status_code == 403
    site_admin.post("/admin/accounting/billingperiod/", {"action": "delete_selected", "_selected_action": [bp.pk],
                                                        "post": "yes"})
    assert BillingPeriod.objects.get(pk=bp.pk).lines.count() == 1
    assert [e.action for e in AuditEvent.objects.all()] == ["period.close"]


def test_an_open_period_has_nothing_to_edit_but_its_name_when_added(site_admin):
    site_admin.post("/admin/accounting/billingperiod/add/", {"period": "2026-03", "rate_card_version": "5"})
    bp = BillingPeriod.objects.get(period="2026-03")
    assert bp.rate_card_version is None and not bp.is_closed
    site_admin.post(f"/admin/accounting/billingperiod/{bp.pk}/change/", {"rate_card_version": "5"})
    bp.refresh_from_db()
    assert bp.rate_card_version is None


def test_audit_events_cannot_be_changed_or_deleted_in_the_admin(site_admin, closed_march):
    event = AuditEvent.objects.get(action="period.close")
    assert site_admin.get(f"/admin/teams/auditevent/{event.pk}/delete/").status_code == 403
    assert site_admin.post(f"/admin/teams/auditevent/{event.pk}/delete/", {"post": "yes"}).status_code == 403
    assert site_admin.post(f"/admin/teams/auditevent/{event.pk}/change/", {"action": "x"}).status_code == 403
    listing = site_admin.get("/admin/teams/auditevent/")
    assert listing.status_code == 200 and b"delete_selected" not in listing.content
    site_admin.post("/admin/teams/auditevent/", {"action": "delete_selected", "_selected_action": [event.pk],
                                                 "post": "yes"})
    assert AuditEvent.objects.get(pk=event.pk).action == "period.close"


def test_audit_events_are_append_only_in_the_model(db):
    from apps.teams.models import AppendOnly

    event = AuditEvent.objects.create(action="period.close", target="2026-03", new_value={"closed": True})
    event.target = "2026-04"
    with pytest.raises(AppendOnly, match="audit events are never changed"):
        event.save()
    with pytest.raises(AppendOnly, match="audit events are never deleted"):
        event.delete()
    with pytest.raises(AppendOnly, match="audit events are never deleted"):
        AuditEvent.objects.filter(pk=event.pk).delete()
    with pytest.raises(AppendOnly, match="audit events are never changed"):
        AuditEvent.objects.filter(pk=event.pk).update(target="2026-04")
    assert AuditEvent.objects.get(pk=event.pk).target == "2026-03"


def test_deleting_a_user_keeps_their_audit_events(db):
    user = make_user("leaver", "finance")
    AuditEvent.objects.create(actor=user, action="rate.create", target="rate 1")
    user.delete()
    event = AuditEvent.objects.get(action="rate.create")
    assert event.actor is None and event.target == "rate 1"
