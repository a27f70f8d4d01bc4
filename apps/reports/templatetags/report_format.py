"""Number formatting shared by the report templates."""
from datetime import datetime
from decimal import Decimal, InvalidOperation

from babel.numbers import format_currency
from django import template
from django.conf import settings

from apps.accounting.core.measures import gpu_hours, percent_text
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.text import money_text

from apps.accounting.query.presets import local_text

register = template.Library()


@register.filter
def gpuh(seconds, digits=2):
    """Seconds as GPU-hours, e.g. 5400.0 -> '1.50'."""
    if seconds is None:
        return "–"
    return f"{gpu_hours(seconds):,.{int(digits)}f}"


@register.filter
def num(value, digits=2):
    if value is None:
        return "–"
    return f"{value:,.{int(digits)}f}"


@register.filter
def pct(ratio, digits=1):
    """A ratio as a percentage, e.g. 0.4 -> '40.0 %'; None (no allocation) -> '–'."""
    return percent_text(ratio, digits)


@register.filter
def minutes(seconds):
    if seconds is None:
        return "–"
    return f"{seconds / 60.0:,.0f}"


def _decimal(value) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


@register.filter
def money(amount, currency):
    """An amount in its currency's minor unit, written in MONEY_LOCALE (docs/dates-and-money.md):
    en_US '¥1,235', '$27.59', 'KWD1.235'; de_DE '27,59 $'. Rounded half-up like every shown
    amount (`core.rounding.present`), then only written by babel."""
    value = _decimal(amount)
    if value is None or not currency:
        return "–"
    return money_text(value, currency)


@register.filter
def rate(hourly_rate, currency):
    """A rate as people read it: at least the currency's minor digits, more only when the rate
    has them ('$2.345', '$2.00', '¥300', 'KWD0.125')."""
    value = _decimal(hourly_rate)
    if value is None or not currency:
        return "–"
    return format_currency(value.normalize(), currency, locale=settings.MONEY_LOCALE, decimal_quantization=False)


@register.filter
def signum(amount):
    """-1, 0 or 1 for an amount (a Decimal string as the API gives it); None for none."""
    value = _decimal(amount)
    if value is None:
        return None
    return (value > 0) - (value < 0)


@register.filter
def local_time(instant):
    """An instant as people read it, in the billing time zone: '2026-04-02 11:30 CEST'."""
    if not instant:
        return "–"
    if isinstance(instant, str):      # an ISO instant as the API payloads carry it
        instant = datetime.fromisoformat(instant.replace("Z", "+00:00"))
    return local_text(instant, billing_zone())


@register.filter
def cost_text(priced, which="cost"):
    """A `money.Priced` as a table cell: its cost (or, with "idle", its idle cost) through
    `money`; 'unpriced' when no rate covers the hours, 'several currencies' when they
    cannot be summed, '–' when there is nothing to price. A cost beside hours no rate covers
    says so, on every page alike ('$20.00 + 3.00 GPU-h unpriced')."""
    if priced is None:
        return "–"
    amount = priced.idle_cost if which == "idle" else priced.cost
    if amount is not None:
        shown = money(amount, priced.currency)
        if which != "idle" and priced.unpriced:
            shown += f" + {priced.unpriced_gpu_hours:.2f} GPU-h unpriced"
        return shown
    if priced.mixed:
        return "several currencies"
    return "unpriced" if priced.unpriced else "–"
