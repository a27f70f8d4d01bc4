"""The billing time zone and its days (docs/dates-and-money.md).

`billing_zone()` is the zone every billing day and month is cut in: `BILLING_TIMEZONE`, or the zone
a closed month was closed in while `in_zone` reads it. An hour belongs to the billing day its start
falls in (as `TruncDate(hour_start, zone)` does), so a day is the hours with
`day_start <= hour_start < next day_start`, both local midnights expressed in UTC.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo


# A closed month is read in the zone it was closed in (docs/chargeback.md, "3. Close the month"):
# `in_zone` sets it for the work done inside, and `billing_zone()` answers it there.
_zone_of_closed_month: ContextVar[str | None] = ContextVar("zone_of_closed_month", default=None)


def billing_zone() -> ZoneInfo:
    from django.conf import settings
    return ZoneInfo(_zone_of_closed_month.get() or settings.BILLING_TIMEZONE)


@contextmanager
def in_zone(key: str | None):
    """Billing days and months inside are those of zone `key` (None or "": the configured zone)."""
    token = _zone_of_closed_month.set(key or None)
    try:
        yield
    finally:
        _zone_of_closed_month.reset(token)


def local_midnight(day: date, zone: ZoneInfo) -> datetime:
    """The first instant of a billing-zone day, in UTC. Where DST starts at midnight (the
    local midnight does not exist) it is the first local instant of the day (fold=0 reads the
    missing wall time with the offset in force before the gap)."""
    return datetime.combine(day, time.min, tzinfo=zone).astimezone(timezone.utc)



def day_start(day: date, tz: ZoneInfo | None = None) -> datetime:
    """The day's first instant in UTC: the same midnight a typed date means (docs/dates-and-money.md)."""
    return local_midnight(day, tz or billing_zone())


def day_of(instant: datetime, tz: ZoneInfo | None = None) -> date:
    return instant.astimezone(tz or billing_zone()).date()


def days_touched(start: datetime, end: datetime, tz: ZoneInfo | None = None) -> list[date]:
    """Billing days holding an hour start in [start, end) (start, end on whole hours)."""
    if end <= start:
        return []
    first, last = day_of(start, tz), day_of(end - timedelta(seconds=1), tz)
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]



def day_windows(start: datetime, end: datetime, tz: ZoneInfo | None = None) -> list[tuple[datetime, datetime]]:
    """[start, end) cut at billing-day boundaries: one atomic ingest (and one task) per day."""
    tz = tz or billing_zone()
    out = []
    cursor = start
    while cursor < end:
        nxt = min(day_start(day_of(cursor, tz) + timedelta(days=1), tz), end)
        out.append((cursor, nxt))
        cursor = nxt
    return out
