"""Billing periods (`YYYY-MM` months): parsing, their bounds in a zone, the next and previous one,
and the years the portal accepts (docs/dates-and-money.md). No Django.
"""
from __future__ import annotations

import calendar
import re
from datetime import date, datetime, time
from zoneinfo import ZoneInfo


MIN_YEAR, MAX_YEAR = 2000, 2100
YEARS_TEXT = f"years {MIN_YEAR}-{MAX_YEAR} only"
# ---------------------------------------------------------------- billing periods

PERIOD_RE = re.compile(r"(\d{4})-(\d{2})", re.ASCII)


def _year_month(period: str) -> tuple[int, int]:
    """(year, month) of 'YYYY-MM' with a year in 2000-2100; ValueError naming the period else."""
    m = PERIOD_RE.fullmatch(period or "") if isinstance(period, str) else None
    if not m or not 1 <= int(m.group(2)) <= 12:
        shown = period if not isinstance(period, str) or len(period) <= 20 else period[:20] + "…"
        raise ValueError(f"period={shown!r} is not a month like 2026-03 (YYYY-MM)")
    year = int(m.group(1))
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise ValueError(f"period={period!r} is out of range: the portal accepts {YEARS_TEXT}")
    return year, int(m.group(2))


def parse_period(text: str) -> str:
    year, month = _year_month(text)
    return f"{year:04d}-{month:02d}"


def period_bounds(period: str, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """[start, end) of a calendar month in the billing zone, as aware datetimes."""
    year, month = _year_month(period)
    start = datetime.combine(date(year, month, 1), time(0), tzinfo=zone)
    end_day = date(year + month // 12, month % 12 + 1, 1)
    return start, datetime.combine(end_day, time(0), tzinfo=zone)


def period_of(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


def next_period(period: str) -> str:
    year, month = int(period[:4]), int(period[5:7])
    return f"{year + month // 12:04d}-{month % 12 + 1:02d}"


def prev_period(period: str) -> str:
    year, month = int(period[:4]), int(period[5:7])
    return f"{year - (month == 1):04d}-{(month - 2) % 12 + 1:02d}"


def last_day(period: str) -> date:
    year, month = int(period[:4]), int(period[5:7])
    return date(year, month, calendar.monthrange(year, month)[1])
