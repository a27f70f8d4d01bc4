"""`BILLING_TIMEZONE` changed after months were closed (docs/chargeback.md, "The billing time
zone of closed months"): closing another month is refused, naming both zones, and the system
check warns of every closed month whose zone is not the configured one."""
import pytest
from django.core import checks
from django.core.management import CommandError, call_command

from apps.accounting.actions.audit import ActionError
from apps.accounting.actions.periods import do_close_period
from apps.accounting.models import BillingPeriod

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_usage, utc

pytestmark = pytest.mark.django_db


@pytest.fixture
def berlin_closed(settings):
    """February and March 2026 closed with the billing zone Europe/Berlin; usage in each."""
    settings.BILLING_TIMEZONE = "Europe/Berlin"
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00")
    gpu = make_device(prod)
    for month in (2, 3, 4):
        make_usage(gpu, "ml", utc(2026, month, 10), hours=2)
    do_close_period("2026-02")
    do_close_period("2026-03")
    return settings


def zone_warnings():
    return [m for m in checks.run_checks(databases=["default"]) if m.id == "accounting.W001"]


def test_closing_is_refused_once_the_zone_changed(berlin_closed, finance, api):
    settings = berlin_closed
    settings.BILLING_TIMEZONE = "UTC"
    message = ("BILLING_TIMEZONE is UTC, but the closed months 2026-02, 2026-03 were closed in Europe/Berlin: "
               "closing 2026-04 in UTC would bucket its hours differently from them. Set BILLING_TIMEZONE back "
               "to Europe/Berlin, or have an admin reopen those months")
    with pytest.raises(ActionError) as refused:
        do_close_period("2026-04")
    assert str(refused.value) == message
    response = api(finance).post("/api/v1/chargeback/close/", {"period": "2026-04"}, format="json")
    assert (response.status_code, response.json()) == (409, {"detail": message})
    with pytest.raises(CommandError, match="closed in Europe/Berlin"):
        call_command("close_period", "2026-04")
    assert not BillingPeriod.objects.filter(period="2026-04", closed_at__isnull=False).exists()

    settings.BILLING_TIMEZONE = "Europe/Berlin"        # back as it was: the close goes through
    assert do_close_period("2026-04").billing_timezone == "Europe/Berlin"


def test_a_closed_month_of_unknown_zone_does_not_refuse(berlin_closed):
    """Months closed before the zone was recorded have it blank: unknown, not a mismatch."""
    settings = berlin_closed
    BillingPeriod.objects.filter(closed_at__isnull=False).update(billing_timezone="")
    settings.BILLING_TIMEZONE = "UTC"
    assert do_close_period("2026-04").billing_timezone == "UTC"
    assert zone_warnings() == []


def test_the_system_check_names_the_months_closed_in_another_zone(berlin_closed):
    settings = berlin_closed
    assert zone_warnings() == []
    settings.BILLING_TIMEZONE = "America/New_York"
    [warning] = zone_warnings()
    assert warning.level == checks.WARNING
    assert warning.msg == ("BILLING_TIMEZONE is America/New_York, but the closed months 2026-02, 2026-03 were "
                           "closed in Europe/Berlin")
    assert "reopen" in warning.hint and "docs/chargeback.md" in warning.hint
    assert [m for m in checks.run_checks() if m.id == "accounting.W001"] == []   # asks the database only when told


def november_usage_lines():
    from apps.accounting.ledger.statements import statement
    return [(line.team, line.kind, float(line.allocated_gpu_seconds) / 3600, f"{line.cost:.2f}")
            for line in statement("2026-11").lines if line.kind == "usage"]


@pytest.mark.parametrize("closed_in, now_in", [("Europe/Berlin", "UTC"), ("UTC", "Europe/Berlin")])
def test_the_boundary_hour_of_a_zone_change_is_billed_once(settings, finance, closed_in, now_in):
    """ml ran from 2026-10-31T16:00Z to 2026-11-01T00:00Z (8 h) and 2 h on 10 November, at 2.00.
    October closed in one zone, then BILLING_TIMEZONE changed: November starts where October
    ended, so the hour 2026-10-31T23:00Z is billed exactly once — in November when October closed
    in Berlin (its end, 23:00Z, is before UTC's midnight: 7 h in October, 3 h in November), and
    not again when October closed in UTC took it (8 h in October; Berlin's November would have
    begun at 23:00Z)."""
    settings.BILLING_TIMEZONE = closed_in
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    make_rate(hourly_rate="2.00")
    gpu = make_device(prod)
    make_usage(gpu, "ml", utc(2026, 10, 31, 16), hours=8)
    make_usage(gpu, "ml", utc(2026, 11, 10), hours=2)
    october = do_close_period("2026-10")
    october_hours = sum(line.allocated_gpu_seconds for line in october.lines.all()) / 3600
    settings.BILLING_TIMEZONE = now_in
    november = 3.0 if closed_in == "Europe/Berlin" else 2.0
    assert october_hours + november == 10.0                      # every hour once
    assert november_usage_lines() == [("A", "usage", november, f"{2 * november:.2f}")]
    from apps.accounting.ledger.daily_money import focus_month
    days = [d for key, ds in focus_month("2026-11").days.items() if key[1] == "usage" for d in ds]
    assert sum(d.allocated_gpu_seconds for d in days) / 3600 == november      # FOCUS days hold the edge hour too
