"""Celery tasks of accounting: thin, safe to repeat (docs/architecture.md)."""
from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from .calc import period_of
from .months import closed_periods, prepare_month
from .timeparse import billing_zone


@shared_task(soft_time_limit=600, time_limit=660)
def prepare_month_answers() -> list[str]:
    """Bring the stored answers of the month to date and of last month (while it is open: the
    one finance closes next) up to date after ingest, so that pages, the API and closing find
    them stored instead of computing them (docs/performance.md). A month whose answer is
    current costs one query."""
    today = timezone.now().astimezone(billing_zone()).date()
    this_month = period_of(today)
    last_month = period_of(today.replace(day=1) - timedelta(days=1))
    closed = closed_periods()
    prepared = [p for p in (last_month, this_month) if p not in closed]
    for period in prepared:
        prepare_month(period)
    return prepared


@shared_task(soft_time_limit=300, time_limit=360)
def compact_input_changes() -> dict:
    """Nightly housekeeping of the stored month answers: trim the log of input changes they are
    versioned by (every answer is re-proved once after it), and drop the parts closed months no
    longer read."""
    from .answers import compact_input_changes as compact
    from .months import prune_closed_months

    return {"log_rows_removed": compact(), "closed_months_pruned": prune_closed_months()}
