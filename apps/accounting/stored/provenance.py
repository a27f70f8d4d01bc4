"""Who computed a stored answer's part (docs/performance.md, "A read that computes"): a count per
(period, part) for this process, and the parts a reader computed itself because no worker had
stored them current — said on its response (`X-Answer-Computed: on-read`, gpuportal/middleware.py)
— told apart from the worker's (`as_worker`).
"""
from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from contextvars import ContextVar

# (period, part) → how many times this process computed it; `tests/accounting/stored/test_answers_day_parts.py`
# counts the day parts an ingested hour recomputes with it.
recomputed: Counter = Counter()
# Set while a worker task prepares answers; outside it, a computation is a reader's own.
_in_worker: ContextVar[bool] = ContextVar("answers_in_worker", default=False)
# The parts the current request computed itself (None: nobody is listening).
_on_read: ContextVar[list | None] = ContextVar("answers_on_read", default=None)


def note_computed(period: str, part: str) -> None:
    """Record that this process computed a stored answer's part now: a reader's own computation
    is said on its response (`computed_on_read`), a worker's is not."""
    recomputed[(period, part)] += 1
    seen = _on_read.get()
    if seen is not None and not _in_worker.get():
        seen.append((period, part))


@contextmanager
def as_worker():
    """Computations inside are the worker's (`tasks.prepare_month_answers`), not a reader's."""
    token = _in_worker.set(True)
    try:
        yield
    finally:
        _in_worker.reset(token)


@contextmanager
def computed_on_read():
    """Yields the list of (period, part) a reader computes itself inside, because no worker had
    stored them current (docs/performance.md, "A read that computes")."""
    seen: list = []
    token = _on_read.set(seen)
    try:
        yield seen
    finally:
        _on_read.reset(token)


def computed_here() -> list:
    """The (period, part) the current request has computed itself so far (`computed_on_read`)."""
    return list(_on_read.get() or [])
