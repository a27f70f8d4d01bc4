"""The running month's forecast as a stored answer (docs/forecast.md, "Kept current";
docs/performance.md, "The running month's forecast, stored").

Every team's forecast (`forecast.teams.month_forecast` of the whole fleet, in money) is computed once
by the worker after a write — the task that makes the month's parts current
(`tasks.prepare_month_answers`) — and stored as one `MonthBody` (key `KEY`): a small JSON of the
dataclasses, Decimals as their exact text. Forecasts are per team and independent of each other,
so a team lead's (or `team=`) forecast is the stored fleet answer's rows of their teams. A
`cluster=` filter is computed live (`forecast.teams.month_forecast`).

Its version is what the forecast reads: the month's statement version (its lines: usage dates,
mapping, rates, zone, code; and the late data of the closed months before it, which the month to
date includes), the previous month's usage dates (the 14 days of history reach into it), and
the instant it stands at (`forecast.teams.data_instant`: the ingest watermark, which is not a logged
input). A stored forecast at another version is never served: the reader computes it as before,
stores it and says so (`stored.provenance.note_computed`: `X-Answer-Computed: on-read`). While no
watermark holds the instant below the clock (nothing ingested yet), the forecast moves with the
clock: it is computed on every read and not stored.
"""
from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from apps.accounting.stored.answers import take_lock
from apps.accounting.stored.versions import read_inputs, stored_answers
from apps.accounting.stored.provenance import note_computed
from apps.accounting.stored.responses import read_body, write_body
from apps.accounting.db.bulk import collector_paused
from apps.accounting.core.periods import period_bounds, prev_period
from apps.accounting.calendar.zone import day_of, day_start
from apps.accounting.forecast.model import LOOKBACK_DAYS, DaysLeft, Forecast, RunRate
from apps.accounting.ledger.answer import closed_before, closed_periods, statement_version, stored_days
from apps.accounting.forecast.teams import MONEY, MonthForecast, TeamForecast, data_instant, is_running, month_forecast, today_and_rest
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.usage.cells import UsageFilter, usage_cells

PART = "forecast"                          # the name its computations are counted under (`stored.provenance.recomputed`)
KEY = "forecast?unit=money&scope=all"      # its MonthBody key: every team's forecast, in money


def stored_forecast(period: str, *, teams: set[str] | None = None, now: datetime | None = None,
                    cluster: str | None = None) -> MonthForecast:
    """`forecast.teams.month_forecast(period, teams=teams)` in money, from the stored fleet answer when it
    is current (filtered to `teams`); `cluster=` is computed live. NotRunning as the live one."""
    if cluster:
        return month_forecast(period, now=now, teams=teams, cluster=cluster)
    month = fleet_forecast(period, now=now)
    if teams is None:
        return month
    return replace(month, teams=[t for t in month.teams if t.team in teams])


def fleet_forecast(period: str, *, now: datetime | None = None) -> MonthForecast:
    """Every team's forecast of the running month: stored when current, else computed, stored
    (under the part's lock: a reader that finds the worker computing waits for it) and returned."""
    clock = now or timezone.now()
    if not stored_answers() or not is_running(period, clock):
        return month_forecast(period, now=clock)            # SQLite; or NotRunning, as the live one says
    as_of = data_instant(period, clock)
    if as_of >= clock:      # no watermark holds it: it moves with the clock, nothing to keep
        month = month_forecast(period, now=clock)
        note_computed(period, PART)
        return month
    inputs = _inputs_version(period)
    stored = read_body(period, KEY, _version(inputs, as_of))
    if stored is not None:
        return load(stored)
    with transaction.atomic():
        if not take_lock(period, PART):     # someone computed it meanwhile: theirs, if still current
            inputs, as_of = _inputs_version(period, fresh=True), data_instant(period, clock)
            stored = read_body(period, KEY, _version(inputs, as_of))
            if stored is not None:
                return load(stored)
        started = time.perf_counter()
        with collector_paused():
            # The versions were read before: a write committed meanwhile leaves it stale, never
            # served stale. The instant is the one the computation stood at.
            month = month_forecast(period, now=clock, cells=_cells(period, clock))
        write_body(period, KEY, _version(inputs, month.as_of), dump(month), None)
        note_computed(period, PART)
        _last_ms[period] = (time.perf_counter() - started) * 1000.0
    return month


def _cells(period: str, clock: datetime) -> list:
    """What `month_forecast` reads, for the whole fleet: the whole days of its history and of the
    month so far from their stored day parts (`ledger.answer.stored_days`, kept current by the worker),
    today's hours up to the instant it stands at from the usage tables — at 10,000 GPUs, 2 s of
    `usage_cells` over 16 days became a read of stored rows."""
    zone = billing_zone()
    today, _left = today_and_rest(data_instant(period, clock))
    first = min(period_bounds(period, zone)[0], day_start(today - timedelta(days=LOOKBACK_DAYS), zone))
    return (stored_days(day_of(first, zone), today)
            + usage_cells(UsageFilter(start=day_start(today, zone), end=data_instant(period, clock))))


_last_ms: dict[str, float] = {}     # period → the last computation's time here (the bench prints it)


def prepare_forecast(period: str, now: datetime | None = None) -> None:
    """Make the stored forecast of the running month current (`tasks.prepare_month_answers`)."""
    if stored_answers():
        fleet_forecast(period, now=now)


def forecast_version(period: str, *, now: datetime | None = None) -> str | None:
    """The version the stored forecast of `period` is read at now (what a page's stored table
    holding it is versioned by, apps/reports/fragments.py); None when nothing is stored: SQLite,
    a month not running, or no watermark holding the instant below the clock."""
    clock = now or timezone.now()
    if not stored_answers() or not is_running(period, clock):
        return None
    as_of = data_instant(period, clock)
    if as_of >= clock:
        return None
    return _version(_inputs_version(period), as_of)


def _inputs_version(period: str, *, fresh: bool = False) -> str:
    """The logged inputs the forecast reads (one query for them, one for the closed months)."""
    closed = closed_periods(fresh=fresh)
    history = prev_period(period)
    inputs = read_inputs({period, history, *closed_before(period, closed)}, fresh=fresh)
    return f"{statement_version(period, closed=closed, inputs=inputs)}|history {history}:{inputs.dated[history]}"


def _version(inputs: str, as_of: datetime) -> str:
    return f"forecast|{MONEY}|{inputs}|as of {as_of.timestamp()!r}"


# ---------------------------------------------------------------- the dataclasses as JSON, exact

def dump(month: MonthForecast) -> bytes:
    """The forecast as JSON: Decimals as their text (exact, exponent kept), floats as their
    shortest repr (exact), dates and instants in ISO form."""
    return json.dumps({
        "period": month.period, "as_of": month.as_of.isoformat(), "today": month.today.isoformat(),
        "today_left": str(month.today_left), "last_day": month.last_day.isoformat(), "unit": month.unit,
        "teams": [[t.team, t.currency, _forecast(t.forecast), t.unpriced_gpu_hours,
                   None if t.booked is None else str(t.booked)] for t in month.teams],
    }, separators=(",", ":")).encode()


def load(data: bytes) -> MonthForecast:
    d = json.loads(data)
    return MonthForecast(period=d["period"], as_of=datetime.fromisoformat(d["as_of"]),
                         today=date.fromisoformat(d["today"]), today_left=Decimal(d["today_left"]),
                         last_day=date.fromisoformat(d["last_day"]), unit=d["unit"],
                         teams=[TeamForecast(team, currency, _forecast_of(f), unpriced,
                                             None if booked is None else Decimal(booked))
                                for team, currency, f, unpriced, booked in d["teams"]])


def _rate(r: RunRate) -> list:
    return [str(r.mean), str(r.low), str(r.high), r.days]


def _forecast(f: Forecast | None):
    if f is None:
        return None
    return [str(f.month_to_date), str(f.projected), str(f.low), str(f.high), _rate(f.weekday), _rate(f.weekend),
            [str(f.days_left.weekdays), str(f.days_left.weekend_days)], f.history_days,
            [[d.isoformat(), str(v)] for d, v in f.path]]


def _forecast_of(f) -> Forecast | None:
    if f is None:
        return None
    mtd, projected, low, high, weekday, weekend, left, history_days, path = f

    def rate(r):
        return RunRate(Decimal(r[0]), Decimal(r[1]), Decimal(r[2]), r[3])
    return Forecast(month_to_date=Decimal(mtd), projected=Decimal(projected), low=Decimal(low), high=Decimal(high),
                    weekday=rate(weekday), weekend=rate(weekend),
                    days_left=DaysLeft(Decimal(left[0]), Decimal(left[1])), history_days=history_days,
                    path=tuple((date.fromisoformat(d), Decimal(v)) for d, v in path))
