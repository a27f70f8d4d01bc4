"""Celery tasks of accounting: thin, safe to repeat (docs/architecture.md)."""
from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from apps.accounting.stored.provenance import as_worker
from apps.accounting.core.periods import next_period, period_of
from apps.accounting.forecast.stored import prepare_forecast
from apps.accounting.ledger.answer import closed_periods, prepare_month
from .signals import announce_prepared
from apps.accounting.calendar.zone import billing_zone


@shared_task(soft_time_limit=600, time_limit=660)
def prepare_month_answers(periods: list[str] | None = None, recent: bool = False) -> list[str]:
    """Bring the stored answers of `periods` — and, with `recent` or when none are named, of the
    month to date and last month (while it is open: the one finance closes next) — up to date, so
    that pages, the API and closing find them stored instead of computing them (docs/performance.md). Queued after every write to an
    input (`stored/refresh.py`) and by the beat. A closed month's changes show in the first open month
    after it (its late data), which is prepared instead. A current answer costs one query."""
    now = timezone.now()
    today = now.astimezone(billing_zone()).date()
    this_month = period_of(today)
    periods = list(periods or [])
    if recent or not periods:
        periods += [period_of(today.replace(day=1) - timedelta(days=1)), this_month]
    closed = closed_periods()
    prepared = []
    for period in sorted(set(periods)):
        while period in closed:
            period = next_period(period)
        if period <= this_month and period not in prepared:
            prepared.append(period)
    with as_worker():
        for period in prepared:
            prepare_month(period)
            announce_prepared(period)
        # The running month's forecast reads its own month and the history days of the month
        # before it: stored again when either changed (docs/forecast.md, "Kept current").
        if any(p == this_month or next_period(p) == this_month for p in prepared):
            prepare_forecast(this_month, now)
    return prepared


@shared_task(soft_time_limit=300, time_limit=360)
def compact_input_changes() -> dict:
    """Nightly housekeeping of the stored month answers: trim the log of input changes they are
    versioned by (every answer is re-proved once after it), drop the parts closed months no
    longer read, and the stored bodies nobody asked for lately (docs/security.md, "Stored answers")."""
    from apps.accounting.stored.answers import compact_input_changes as compact
    from apps.accounting.stored.responses import prune_bodies
    from apps.accounting.ledger.answer import prune_closed_months

    return {"log_rows_removed": compact(), "closed_months_pruned": prune_closed_months(),
            "bodies_pruned": prune_bodies()}


@shared_task(soft_time_limit=600, time_limit=660)
def import_rate_file(import_id: int) -> str:
    """A rate card uploaded from the browser (`actions.rates.run_rate_import`): its progress and
    result on its `RateImport` row, which the upload's result page shows (docs/chargeback.md)."""
    from apps.accounting.actions.rates import run_rate_import
    return run_rate_import(import_id).status
