"""Query parameters shared by pages and API: parsed once, with errors that name the parameter."""
from datetime import datetime, timedelta, timezone as dt_timezone

from django.conf import settings
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from apps.accounting.timeparse import parse_instant

DEFAULT_DAYS = 7


def parse_window(params, *, default_days=DEFAULT_DAYS):
    """(start, end) from ?start=&end= (ISO 8601 instants or dates), defaulting to the last week.

    Dates and offset-less times are in the billing time zone (docs/dates-and-money.md); the
    answer is in UTC, and every bad value is a ValidationError naming its parameter.
    """
    errors = {}
    now = timezone.now().replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    start = end = None
    try:
        end = parse_instant(params["end"], name="end") if params.get("end") else now
    except ValueError as exc:
        errors["end"] = str(exc)
    try:
        if params.get("start"):
            start = parse_instant(params["start"], name="start")
        elif end is not None:
            start = end - timedelta(days=default_days)
    except ValueError as exc:
        errors["start"] = str(exc)
    if errors:
        raise ValidationError(errors)
    if end <= start:
        raise ValidationError({"end": f"end ({end.isoformat()}) must be after start ({start.isoformat()})"})
    limit = settings.MAX_REPORT_DAYS
    if end - start > timedelta(days=limit):
        raise ValidationError({"end": f"the window is {(end - start).days} days; the limit is {limit} days"})
    return start, end


def parse_choice(params, name, choices, default=None):
    """One of `choices`; absent: `default`. Present but empty is refused like any value outside
    them (the OpenAPI schema lists the choices as an enum, docs/api.md)."""
    value = params.get(name)
    if value == "":
        raise ValidationError({name: f"{name} is empty: give one of {', '.join(choices)}"})
    if value is None:
        value = default
    if value is None:
        raise ValidationError({name: f"{name} is required: one of {', '.join(choices)}"})
    if value not in choices:
        raise ValidationError({name: f"{name}={value!r} is not one of {', '.join(choices)}"})
    return value


def iso(dt: datetime) -> str:
    return dt.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z")
