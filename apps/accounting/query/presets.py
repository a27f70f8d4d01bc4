"""The date presets of the picker: whole billing-zone days, as the `start` / `end` dates a link
carries (`end` exclusive). Plain dates in, plain dates out; no Django here.

- last 7 days: the 7 days ending today (today included), also the pages' default window;
- last 30 days: likewise, 30 days;
- month to date: from the 1st of this month to the end of today;
- this month: the whole calendar month (its days to come hold no usage yet);
- last month: the calendar month before this one.

Anything else the dates say is a custom window.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

DEFAULT = "last_7_days"
CUSTOM = "custom"


@dataclass(frozen=True)
class Preset:
    key: str
    label: str
    start: date
    end: date           # exclusive

    @property
    def days(self) -> int:
        return (self.end - self.start).days


def presets(today: date) -> list[Preset]:
    """The presets as of `today` (a billing-zone date)."""
    tomorrow = today + timedelta(days=1)
    first = today.replace(day=1)
    next_first = (first + timedelta(days=32)).replace(day=1)
    last_first = (first - timedelta(days=1)).replace(day=1)
    return [
        Preset("last_7_days", "Last 7 days", today - timedelta(days=6), tomorrow),
        Preset("last_30_days", "Last 30 days", today - timedelta(days=29), tomorrow),
        Preset("month_to_date", "Month to date", first, tomorrow),
        Preset("this_month", "This month", first, next_first),
        Preset("last_month", "Last month", last_first, first),
    ]


def preset_named(key: str, today: date) -> Preset:
    return next(p for p in presets(today) if p.key == key)


def _plain_date(text: str | None) -> date | None:
    text = (text or "").strip()
    if len(text) != 10:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def matching(start_text: str | None, end_text: str | None, today: date) -> str:
    """Which preset the URL's `start` / `end` name: none given is the default; two plain
    dates equal to a preset's are that preset; anything else is custom."""
    if not (start_text or "").strip() and not (end_text or "").strip():
        return DEFAULT
    start, end = _plain_date(start_text), _plain_date(end_text)
    for p in presets(today):
        if (start, end) == (p.start, p.end):
            return p.key
    return CUSTOM


def input_dates(start_text: str | None, end_text: str | None, start: datetime, end: datetime,
                zone: ZoneInfo) -> tuple[date, date]:
    """The dates the picker's inputs show: the ones the URL gave when they are plain dates,
    else the billing-zone dates the window starts on and ends by (an end after a midnight
    shows the next day, as the end is exclusive)."""
    shown_start = _plain_date(start_text) or start.astimezone(zone).date()
    shown_end = _plain_date(end_text)
    if shown_end is None:
        local = end.astimezone(zone)
        shown_end = local.date() if local.time() == time.min else local.date() + timedelta(days=1)
    return shown_start, shown_end


def local_text(instant: datetime, zone: ZoneInfo) -> str:
    """An instant as people read it in the billing zone: '2026-11-16 00:00 CET'."""
    return instant.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")


def window_text(start: datetime, end: datetime, zone: ZoneInfo) -> str:
    """The exact window a page computed, in the billing zone: '2026-03-23 00:00 CET –
    2026-04-01 00:00 CEST (Europe/Berlin, 9 days)'. Between two local midnights the length is
    in billing days (a DST day is one day of 23 or 25 hours); otherwise in hours, or days of
    24 hours past two days."""
    local_start, local_end = start.astimezone(zone), end.astimezone(zone)
    if local_start.time() == time.min and local_end.time() == time.min:
        days = (local_end.date() - local_start.date()).days
        span = f"{days} day{'s' if days != 1 else ''}"
    else:
        hours = (end - start) / timedelta(hours=1)
        span = f"{round(hours, 2):g} hours" if hours < 48 else f"{round(hours / 24, 2):g} days"
    zone_name = f"{zone.key}, " if zone.key not in (local_start.tzname(), "UTC") else ""
    return f"{local_text(start, zone)} – {local_text(end, zone)} ({zone_name}{span})"
