"""Dates and instants as users type them: in URLs, date pickers and command-line options.

The rules (docs/dates-and-money.md):
- a date (`2026-11-01`) is its midnight in the billing time zone (`BILLING_TIMEZONE`), so a
  day may be 23 or 25 hours long and a month of usage is the chargeback month;
- a date-time without an offset (`2026-11-01T10:00`) is a wall-clock time in the billing zone:
  in a DST gap (02:30 on the spring-forward day) it is read with the offset in force before
  the gap, i.e. pushed forward by the gap's length (03:30 local); in a DST fold (02:30 on the
  fall-back day, which happens twice) it is the first of the two (still summer time);
- an explicit offset or `Z` is kept as given;
- only the years 2000-2100 are accepted, so no later date arithmetic can overflow.
The result is always an aware datetime in UTC.
"""
from __future__ import annotations

from datetime import date, datetime, timezone
from zoneinfo import ZoneInfo

from apps.accounting.calendar.zone import billing_zone, local_midnight
from apps.accounting.core.periods import MAX_YEAR, MIN_YEAR, YEARS_TEXT

MAX_LENGTH = 64   # the longest ISO 8601 instant is 32 characters; anything longer is not one

# The same rules as regular expressions, for the OpenAPI document (docs/api.md): a client that
# sends what they match is never refused for the value alone. Days are those of their month
# (29 February in leap years only: 2000 is one, 2100 is not).
YEAR_PATTERN = r"(20[0-9]{2}|2100)"
_LEAP_YEAR = r"20(0[048]|[2468][048]|[13579][26])"
DATE_PATTERN = (rf"({YEAR_PATTERN}-(0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])"
                rf"|{YEAR_PATTERN}-(0[469]|11)-(0[1-9]|[12][0-9]|30)"
                rf"|{YEAR_PATTERN}-02-(0[1-9]|1[0-9]|2[0-8])"
                rf"|{_LEAP_YEAR}-02-29)")
PERIOD_PATTERN = rf"^{YEAR_PATTERN}-(0[1-9]|1[0-2])$"
INSTANT_PATTERN = (rf"^{DATE_PATTERN}"
                   r"(T([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,6})?)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?)?$")



def parse_instant(text: str, *, name: str = "time", zone: ZoneInfo | None = None) -> datetime:
    """'2026-11-01', '2026-11-01T10:00' (billing zone) or '2026-11-01T10:00:00Z' / '+02:00' -> UTC.

    ValueError naming `name` for anything else: malformed text, impossible dates, or a year
    outside 2000-2100 (which also keeps `end - 7 days` and DST arithmetic from overflowing).
    """
    raw = (text or "").strip()
    if not raw:
        raise ValueError(f"{name} is missing (expected an ISO 8601 date or instant)")
    shown = raw if len(raw) <= MAX_LENGTH else raw[:MAX_LENGTH] + "…"
    bad = ValueError(f"{name}={shown!r} is not an ISO 8601 date or instant "
                     "(e.g. 2026-11-01 or 2026-11-01T00:00:00Z)")
    if len(raw) > MAX_LENGTH:
        raise bad
    zone = zone or billing_zone()
    try:
        parsed: date | datetime = date.fromisoformat(raw)
    except ValueError:
        try:
            parsed = datetime.fromisoformat(raw.replace("z", "Z").replace("t", "T"))
        except (ValueError, OverflowError):
            raise bad from None
    if not MIN_YEAR <= parsed.year <= MAX_YEAR:
        raise ValueError(f"{name}={shown!r} is out of range: the portal accepts {YEARS_TEXT}")
    if not isinstance(parsed, datetime):
        return local_midnight(parsed, zone)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=zone)  # fold=0: see the module docstring for gaps and folds
    return parsed.astimezone(timezone.utc)


def parse_window_options(start_text: str, end_text: str, zone: ZoneInfo | None = None) -> tuple[datetime, datetime]:
    """A command's --start/--end; ValueError naming the option that is wrong."""
    return parse_instant(start_text, name="--start", zone=zone), parse_instant(end_text, name="--end", zone=zone)
