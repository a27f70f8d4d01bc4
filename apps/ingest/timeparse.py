"""ISO 8601 instants or dates, as users type them on the command line and in URLs."""
from datetime import date, datetime, time, timezone


def parse_instant(text: str, *, name: str = "time") -> datetime:
    """'2026-11-01', '2026-11-01T10:00', '2026-11-01T10:00:00Z' or with an offset -> aware UTC datetime.

    A bare date means its midnight UTC; a time without a zone is taken as UTC.
    """
    raw = (text or "").strip()
    if not raw:
        raise ValueError(f"{name} is missing (expected an ISO 8601 date or instant)")
    try:
        if len(raw) == 10:
            d = date.fromisoformat(raw)
            return datetime.combine(d, time.min, tzinfo=timezone.utc)
        dt = datetime.fromisoformat(raw.replace("z", "Z"))
    except ValueError:
        raise ValueError(f"{name}={text!r} is not an ISO 8601 date or instant (e.g. 2026-11-01 or 2026-11-01T00:00:00Z)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


def parse_window_options(start_text: str, end_text: str) -> tuple[datetime, datetime]:
    """A command's --start/--end; ValueError naming the option that is wrong."""
    return parse_instant(start_text, name="--start"), parse_instant(end_text, name="--end")
