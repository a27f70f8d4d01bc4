"""The month's common API bodies, rendered by the worker (docs/performance.md, "Bodies rendered
by the worker").

After a write, the worker's task makes the month's stored answer current and sends
`month_prepared`; this renders the bodies most reads ask for — the chargeback statement by team
and by namespace, and the usage by team, as finance and admins (every team's money) see them —
and stores them with their versions, exactly as a request would (`stored.stored_response`: the
same key, version and renderer). The first such read after the worker is then a stored read.
Other views (a team lead's, another grouping) are still rendered by their first read.
"""
from __future__ import annotations

import logging
from types import SimpleNamespace

from apps.accounting.stored import month_body
from apps.accounting.stored import stored_answers
from apps.accounting.query.filters import iso_utc as iso
from apps.accounting.ledger.answer import month_bounds, statement_version, usage_version
from apps.accounting.usage.cells import UsageFilter
from apps.teams.access import ROLE_FINANCE
from apps.web.rendered import render_plain, renders_stored
from rest_framework.settings import api_settings

from .chargeback import chargeback_key, chargeback_payload
from .usage import usage_key, usage_payload

log = logging.getLogger(__name__)

CHARGEBACK_VIEWS = ("team", "namespace")   # group_by of the statement bodies rendered ahead
USAGE_VIEWS = ("team",)                    # group_by of the month's usage bodies rendered ahead


class _EveryTeam:
    """Whom the bodies rendered ahead are for: a reader of every team's money (finance)."""
    is_authenticated = True
    is_superuser = False
    _gpuportal_roles = frozenset({ROLE_FINANCE})


def prepare_bodies(period: str, **_kwargs) -> list[str]:
    """Render and store the month's common bodies that are not stored at their current version.
    Returns their keys (rendered now or already current)."""
    if not stored_answers():
        return []
    # The API's JSON renderer, as a request that accepts JSON gets it (the one sending stored bytes).
    renderer = next(r() for r in api_settings.DEFAULT_RENDERER_CLASSES if renders_stored(r))
    request = SimpleNamespace(user=_EveryTeam())
    keys = []
    version = statement_version(period)
    for group_by in CHARGEBACK_VIEWS:
        key = chargeback_key(group_by, "apart", None)
        month_body(period, key, version, lambda g=group_by: render_plain(
            renderer, chargeback_payload(request, period, g, "apart")))
        keys.append(key)
    start, end = month_bounds(period)
    f = UsageFilter(start=start, end=end)
    stored = usage_version(f, True, scoped=True)
    if stored is not None:
        for group_by in USAGE_VIEWS:
            key = usage_key(group_by, "all", None)
            month_body(period, key, stored[1], lambda g=group_by: render_plain(renderer, {
                "start": iso(start), "end": iso(end), "group_by": g, "results": usage_payload(request, g, f)}))
            keys.append(key)
    return keys
