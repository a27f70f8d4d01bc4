"""Budget forecast alerts: a team whose month-end forecast passes its budget before it has spent it.

"GPU budget forecast: team vision will exceed its 2026-11 budget of 500.00 USD by about
2026-11-24 (…)", once per team per billing month (key `forecast:<team>:<YYYY-MM>`). The forecast
is `apps.accounting.forecast.teams.month_forecast`, the one the team page and the API show
(docs/forecast.md); the day is the first at which the mean run rates reach the budget
(`forecast.model.crossing_day`). A money budget is compared with the forecast in its currency; a
GPU-hour budget with the forecast of allocated GPU-hours. Nothing is raised when the month to
date has reached the budget already: the 100 % budget alert says so.
"""
from __future__ import annotations

import logging
from datetime import datetime

from django.utils import timezone

from apps.accounting.core.periods import period_of
from apps.accounting.forecast.model import crossing_day
from apps.accounting.forecast.teams import GPU_HOURS, MONEY, month_forecast
from apps.accounting.calendar.zone import billing_zone

from .alerts import Raised, channels_for, do_raise_alert
from .models import Alert, TeamBudget

log = logging.getLogger(__name__)


def check_budget_forecasts(now: datetime | None = None) -> list[Raised]:
    now = now or timezone.now()
    period = period_of(now.astimezone(billing_zone()).date())
    budgets = {b.team.name: b for b in TeamBudget.objects.filter(active=True).select_related("team")}
    raised = []
    for unit in (MONEY, GPU_HOURS):
        names = {name for name, b in budgets.items() if (b.unit == TeamBudget.Unit.GPU_HOURS) == (unit == GPU_HOURS)}
        if not names:
            continue
        month = month_forecast(period, now=now, teams=names, unit=unit)
        for t in month.teams:
            budget = budgets[t.team]
            if t.forecast is None or (unit == MONEY and t.currency != budget.currency):
                continue
            f, limit = t.forecast, budget.monthly_amount
            if limit <= 0 or f.month_to_date >= limit or f.projected <= limit:
                continue
            day = crossing_day(f, limit, month.today, month.today_left, month.last_day)
            raised.append(_raise(budget, period, f, day))
    return raised


def _raise(budget: TeamBudget, period: str, f, day) -> Raised:
    amount, shown = budget.amount_text, budget.shown
    text = (f"GPU budget forecast: team {budget.team.name} will exceed its {period} budget of "
            f"{shown(budget.monthly_amount)} by about {day:%Y-%m-%d} (projected month-end "
            f"{shown(f.projected)}, range {shown(f.low)} – {shown(f.high)}; "
            f"{shown(f.month_to_date)} so far).")
    fields = {"team": budget.team.name, "month": period, "budget": amount(budget.monthly_amount),
              "unit": budget.unit, "currency": budget.currency or None, "exceeds_on": day.isoformat(),
              "month_to_date": amount(f.month_to_date), "projected": amount(f.projected),
              "low": amount(f.low), "high": amount(f.high)}
    return do_raise_alert(key=f"forecast:{budget.team.name}:{period}", kind=Alert.Kind.FORECAST, text=text,
                          fields=fields, team=budget.team.name, channels=channels_for(budget))
