"""System checks of accounting's stored state (docs/chargeback.md, "The billing time zone of
closed months"). They read the database, so they run where Django runs its database checks:
`manage.py migrate` and `manage.py check --database default`."""
from django.conf import settings
from django.core import checks
from django.db import connection

from .models import BillingPeriod


def closed_in_other_zones() -> dict[str, list[str]]:
    """The closed months whose stored billing zone is not `BILLING_TIMEZONE`, by that zone
    (months closed before zones were recorded have it blank: unknown, left out)."""
    out: dict[str, list[str]] = {}
    rows = (BillingPeriod.objects.filter(closed_at__isnull=False).exclude(billing_timezone="")
            .exclude(billing_timezone=settings.BILLING_TIMEZONE).order_by("period")
            .values_list("period", "billing_timezone"))
    for period, zone in rows:
        out.setdefault(zone, []).append(period)
    return out


def zone_change(others: dict[str, list[str]]) -> str:
    """"BILLING_TIMEZONE is UTC, but the closed months 2026-02, 2026-03 were closed in Europe/Berlin"."""
    months = [m for ms in others.values() for m in ms]
    where = " and ".join(f"{', '.join(ms)} in {zone}" for zone, ms in sorted(others.items()))
    if len(others) == 1:
        where = f"{', '.join(months)} {'was' if len(months) == 1 else 'were'} closed in {next(iter(others))}"
    else:
        where = f"were closed in other zones: {where}"
    return f"BILLING_TIMEZONE is {settings.BILLING_TIMEZONE}, but the closed month{'s' if len(months) > 1 else ''} {where}"


@checks.register(checks.Tags.database)
def closed_months_zone(app_configs=None, databases=None, **kwargs):
    if not databases or "default" not in databases:
        return []
    if BillingPeriod._meta.db_table not in connection.introspection.table_names():
        return []   # `migrate` checks before it has made the table: nothing is closed yet
    others = closed_in_other_zones()
    if not others:
        return []
    return [checks.Warning(
        zone_change(others),
        hint=("their statements and late data are bucketed by the zone they were closed in; set BILLING_TIMEZONE "
              f"back to {' or '.join(sorted(others))}, or reopen and close them again (docs/chargeback.md, "
              "\"The billing time zone of closed months\")"),
        id="accounting.W001")]
