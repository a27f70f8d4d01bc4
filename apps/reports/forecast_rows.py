"""A month's forecasts as the API answers them and the pages show them (docs/forecast.md):
amounts as decimal strings in the currency's minor unit (GPU-hours as numbers), the days left as
numbers. The forecasts themselves are `accounting.runrate.month_forecast`'s.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone as dt_timezone
from decimal import Decimal

from apps.accounting.core.rounding import present
from apps.accounting.forecast.model import LOOKBACK_DAYS, days_left
from apps.accounting.forecast.teams import MONEY, MonthForecast, TeamForecast


def _iso(instant: datetime) -> str:
    return instant.astimezone(dt_timezone.utc).isoformat().replace("+00:00", "Z")


def _shown(amount: Decimal, currency: str | None):
    """Money as a decimal string in the currency's minor unit; GPU-hours as a number (6 places)."""
    return present(amount, currency) if currency else round(float(amount), 6)


def team_row(t: TeamForecast, unit: str = MONEY) -> dict:
    f, cur = t.forecast, t.currency
    row = {"team": t.team, "currency": cur}
    for name in ("month_to_date", "projected", "low", "high"):
        row[name] = _shown(getattr(f, name), cur) if f else None
    if f is None and t.booked is not None:      # nothing to project, but money booked all the same
        row["month_to_date"] = _shown(t.booked, cur)
    row["weekday_daily"] = _shown(f.weekday.mean, cur) if f else None
    row["weekend_daily"] = _shown(f.weekend.mean, cur) if f else None
    row["history_days"] = f.history_days if f else 0
    row["unpriced_gpu_hours"] = t.unpriced_gpu_hours
    if f is not None:
        row["note"] = None
    elif unit == MONEY and cur is None:
        row["note"] = "no priced usage: nothing to project"
    else:
        row["note"] = f"no usage in the last {LOOKBACK_DAYS} complete days: too new to project"
    return row


def forecast_payload(month: MonthForecast) -> dict:
    """The forecasts as the API answers them and the pages show them: amounts as decimal strings
    in the currency's minor unit (GPU-hours as numbers), the days left as numbers."""
    left = days_left(month.today, month.today_left, month.last_day)
    return {
        "period": month.period,
        "as_of": _iso(month.as_of),
        "unit": month.unit,
        "lookback_days": LOOKBACK_DAYS,
        "weekdays_left": round(float(left.weekdays), 6),
        "weekend_days_left": round(float(left.weekend_days), 6),
        "results": [team_row(t, month.unit) for t in month.teams],
    }


def forecasts_by_team(payload: dict) -> dict[str, list[dict]]:
    """team -> its rows (one per currency), for the pages' tables."""
    out: dict[str, list[dict]] = defaultdict(list)
    for row in payload["results"]:
        out[row["team"]].append(row)
    return dict(out)


__all__ = ["forecast_payload", "forecasts_by_team", "team_row"]
