"""What the right-sizing block shows ("what you could save", `{% rightsizing_summary %}`): the
largest savings, how many workloads, the totals — stored for a whole month's window (the team
page's) at the version of everything it reads (docs/performance.md, "The team page").

The rows come from `rightsizing_rows`; what it reads is logged: the month's usage hours and the
team mapping (the month's cells version), pod owners (`owners`) and the rate card (`rates`) in
the log of `stored/inputs.py`. What is not logged is in the version itself: the billing day it
prices and resolves teams on, each cluster's window end (the ingest watermark caps it) and the
advice settings. A version read before computing, a miss computed and stored: never served
stale. Any other window (the trailing days of the advice page, one cluster) is computed live.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from decimal import Decimal

from django.utils import timezone

from apps.accounting.stored import month_body as body
from apps.accounting.stored import OWNERS, RATES
from apps.accounting.ledger.answer import usage_version
from apps.accounting.calendar.zone import billing_zone
from apps.accounting.usage.cells import UsageFilter
from apps.teams.access import money_covers

from apps.recommendations.rightsizing.rules import KEEP
from apps.recommendations.rightsizing.rows import RightsizeQuery, params_from_settings, rightsizing_rows, total_saving, window_said, windows

SHOWN = 5
FIELDS = ("namespace", "workload_kind", "workload_name", "action_text", "resource_advised", "monthly_saving",
          "currency", "confidence", "hours_observed")     # what the block's table shows of a row


def summary(q: RightsizeQuery) -> dict:
    """{rows: the SHOWN largest advised rows, more: how many other rows have advice, workloads:
    how many rows, totals: [(saving a month, currency)] of every row}."""
    kept = _version(q)
    if kept is None:
        return _compute(q)
    period, version = kept
    q = _normal(q)
    return _load(body(period, _key(q), version, lambda: _dump(_compute(q))))


def _normal(q: RightsizeQuery) -> RightsizeQuery:
    """The same rows asked once for everybody who gets them: one team's rows, seen by someone who
    may see that team, depend on whether its money is in their money scope, not on their scope."""
    if q.team is None or (q.teams is not None and q.team not in q.teams):
        return q
    return replace(q, teams=None, money=q.money and money_covers(q.money_teams, {q.team}), money_teams=None)


def _compute(q: RightsizeQuery) -> dict:
    """The headline leaves the workloads held under a day out (counted apart as `low`,
    docs/advice-and-alerts.md, "What a saving is"); `window` says what the rows measure."""
    rows = rightsizing_rows(q)
    advised = [r for r in rows if r["action"] != KEEP and r["in_totals"]]
    low = [r for r in rows if r["action"] != KEEP and not r["in_totals"]]
    return {"rows": [{k: r[k] for k in FIELDS} for r in advised[:SHOWN]], "more": max(0, len(advised) - SHOWN),
            "workloads": len(rows), "totals": total_saving(rows),
            "low": len(low), "low_totals": total_saving(rows, low_confidence=True), "window": window_said(q)}


def _version(q: RightsizeQuery) -> tuple[str, str] | None:
    if q.start is None or q.end is None or q.cluster:
        return None
    kept = usage_version(UsageFilter(start=q.start, end=q.end), priced=False,
                         also=(OWNERS, RATES))
    if kept is None:
        return None
    now = q.now or timezone.now()
    ends = ",".join(f"{c.pk}:{w[1].isoformat()}" for c, w in windows(q, now))
    return kept[0], (f"{kept[1]}|day {now.astimezone(billing_zone()).date()}|ends {ends}"
                     f"|{params_from_settings()!r}")


def _key(q: RightsizeQuery) -> str:
    def digest(value) -> str:
        text = "*" if value is None else ",".join(sorted(value)) if isinstance(value, frozenset) else str(value)
        return hashlib.sha256(text.encode()).hexdigest()[:16]
    return (f"rightsizing-summary?team={digest(q.team)}&teams={digest(q.teams)}&money={int(q.money)}"
            f"&money_teams={digest(q.money_teams)}&start={q.start.isoformat()}&end={q.end.isoformat()}")


def _dump(s: dict) -> bytes:
    return json.dumps({**s, **{k: [[str(amount), currency] for amount, currency in s[k]]
                               for k in ("totals", "low_totals")}}).encode()


def _load(raw: bytes) -> dict:
    s = json.loads(raw)
    for k in ("totals", "low_totals"):
        s[k] = [(Decimal(amount), currency) for amount, currency in s.get(k, [])]
    return s
