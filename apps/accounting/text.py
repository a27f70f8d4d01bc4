"""Figures written for people — in pages, alerts and e-mails — in one way each
(docs/dates-and-money.md): money in its currency's minor unit with the locale's thousands
separators, quantities with separators, durations in days, hours and minutes."""
from __future__ import annotations

import copy
from decimal import Decimal
from functools import lru_cache

from babel import Locale
from babel.numbers import format_decimal, parse_pattern
from django.conf import settings

from apps.accounting.core.rounding import present
from apps.accounting.core.currencies import minor_digits


def money_text(amount, currency: str) -> str:
    """'$5,492.52', '¥1,235', 'KWD1.235', 'IQD1.235'; de_DE '5.492,52 $'. Rounded half-up in the
    currency's ISO 4217 minor unit, written with the locale's pattern and separators."""
    locale = Locale.parse(settings.MONEY_LOCALE)
    return _money_pattern(settings.MONEY_LOCALE, minor_digits(currency)).apply(
        Decimal(present(Decimal(str(amount)), currency)), locale, currency=currency, currency_digits=False)


@lru_cache(maxsize=None)
def _money_pattern(locale: str, digits: int):
    """The locale's currency pattern with ISO 4217's minor digits, not CLDR's (which differ for
    13 codes: IQD has 3 places, CLDR writes 0; docs/dates-and-money.md)."""
    pattern = copy.copy(parse_pattern(Locale.parse(locale).currency_formats["standard"]))
    pattern.frac_prec = (digits, digits)
    return pattern


def quantity_text(value, digits: int = 2) -> str:
    """'1,234.50' (en_US) — GPU-hours and other amounts that are not money."""
    quantized = Decimal(str(value)).quantize(Decimal(1).scaleb(-digits))
    return format_decimal(quantized, format=f"#,##0.{'0' * digits}" if digits else "#,##0",
                          locale=settings.MONEY_LOCALE)


def duration_text(seconds: float) -> str:
    """The two largest whole units: 4320 min → '3 days', 90 min → '1 hour 30 minutes',
    26 h 10 min → '1 day 2 hours', 45 min → '45 minutes'."""
    minutes = int(seconds // 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    parts = [(days, "day"), (hours, "hour"), (mins, "minute")]
    words = [f"{n} {unit}{'' if n == 1 else 's'}" for n, unit in parts if n]
    if not words:
        return "0 minutes"
    first = next(i for i, (n, _) in enumerate(parts) if n)
    # the unit right after the largest, when it is not zero: "1 day 2 hours", never "1 day 5 minutes"
    second = parts[first + 1] if first + 1 < len(parts) else (0, "")
    return words[0] + (f" {second[0]} {second[1]}{'' if second[0] == 1 else 's'}" if second[0] else "")
