"""What a month's statement workbook holds, laid out (docs/chargeback.md, "The statement workbook").

The workbook, the page, the API and its CSV show one statement: every figure here comes from
`statement_rows.statement_payload` or from the statement's lines with their cost as the statement
shows it (`accounting.statement_facts.lines_as_shown`: the statement rounded once as a whole,
`core.rounding.shown_amounts`, docs/chargeback.md "Rounding"). The breakdowns by namespace and by GPU model
add those shown line costs up, so every sheet's total per currency is the statement's
`totals_by_currency` to the minor unit, and a breakdown row is the sum of the CSV's lines it covers.

The cover's facts are read, never recomputed (`accounting.statement_facts`): who closed the month
and when, the rate-card version the statement names, each cluster's ingest watermark, and the
rates the lines were priced at, found on the rate card the statement used (the card as it stood
at the close, for a closed month).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from apps.accounting.core.lines import Line
from apps.accounting.core.rounding import present
from apps.accounting.core.measures import shown_hours
from apps.accounting.models.periods import BillingPeriod
from apps.accounting.pricing.rates import load_rate_card, rate_card_at
from apps.accounting.ledger.facts import Freshness, RateUsed, billed_unit, freshness, lines_as_shown, rates_used
from apps.accounting.ledger.statements import Statement
from apps.accounting.calendar.zone import billing_zone
from apps.teams.models import Team

from .statement_rows import group_row, rate_card_fields, statement_payload


@dataclass
class StatementBook:
    period: str
    closed: bool
    closed_at: datetime | None
    closed_by: str | None
    billing_timezone: str
    scope: list[str] | None     # None: every team and the unallocated capacity
    by_team: dict               # statement_payload(group_by="team")
    by_namespace: list[dict]
    by_model: list[dict]
    adjustments: list[dict]     # the by-team payload's adjustment line rows, with their team
    freshness: list[Freshness]
    rates: list[RateUsed]
    rate_card: dict | None = None   # {"version", "changed_at"} as the statement names it
    cost_centres: dict[str, str] = field(default_factory=dict)   # team -> its cost centre
    adjustment_totals: dict[str, str] = field(default_factory=dict)   # per currency, the adjustments' shown costs

    @property
    def totals_by_currency(self) -> dict[str, str]:
        return self.by_team["totals_by_currency"]


def breakdown(shown: list[tuple[Line, Decimal | None]], key_of) -> list[tuple[tuple, dict]]:
    """(key, figures) per group of lines: hours, efficiency and unpriced hours as a statement
    row counts them (`group_row`: the month's own usage), billed hours of every line, and the
    shown line costs added up per currency (never across currencies)."""
    groups: dict[tuple, list[tuple[Line, Decimal | None]]] = defaultdict(list)
    for line, cost in shown:
        groups[key_of(line)].append((line, cost))
    out = []
    for key in sorted(groups, key=_sortable):
        members = groups[key]
        row = group_row(("", "", "", ""), [line for line, _ in members], with_lines=False)
        costs: dict[str, Decimal] = defaultdict(Decimal)
        billed = Decimal(0)
        for line, cost in members:
            if cost is not None:
                costs[line.currency] += cost
            if line.hourly_rate is not None:
                billed += line.billed_seconds
        out.append((key, {
            "allocated_gpu_hours": row["allocated_gpu_hours"], "used_gpu_hours": row["used_gpu_hours"],
            "efficiency": row["efficiency"], "unpriced_gpu_hours": row["unpriced_gpu_hours"],
            "billed_hours": shown_hours(billed) if any(line.hourly_rate is not None for line, _ in members) else None,
            "costs_by_currency": {c: present(a, c) for c, a in sorted(costs.items())},
        }))
    return out


def _sortable(key: tuple) -> tuple:
    """Keys hold None and Decimals beside text: None last, rates in numeric order."""
    return tuple((v is None, f"{v:020.6f}" if isinstance(v, Decimal) else str(v or "")) for v in key)


def by_namespace(shown) -> list[dict]:
    """Team × cluster × namespace. Unallocated capacity is a row per cluster with team None and
    no namespace; spread shared-idle cost (`shared_idle=spread`) a row per team and cluster."""
    rows = breakdown(shown, lambda line: (line.team, line.cluster, line.namespace))
    out = []
    for (team, cluster, namespace), figures in sorted(rows, key=lambda r: (not r[0][0], r[0])):
        shown_namespace = namespace if namespace or not team else "(shared idle)"
        out.append({"team": team or None, "cluster": cluster, "namespace": shown_namespace, **figures})
    return out


def by_model(shown) -> list[dict]:
    """GPU model × MIG profile × price class × the rate (a mid-month rate change is two rows)."""
    rows = breakdown(shown, lambda line: (line.gpu_model, line.mig_profile, line.price_class,
                                          line.hourly_rate, line.currency, billed_unit(line)))
    return [{"gpu_model": model, "mig_profile": profile, "price_class": price_class or None,
             "hourly_rate": str(rate) if rate is not None else None, "currency": currency or None,
             "billed_unit": unit, **figures}
            for (model, profile, price_class, rate, currency, unit), figures in rows]


def statement_book(stmt: Statement, scope, shared_idle: str = "apart") -> StatementBook:
    """The workbook's content for the teams in `scope` (None: all, with unallocated capacity)."""
    payload = statement_payload(stmt, "team", scope, shared_idle)
    shown = lines_as_shown(stmt.lines, scope)
    seen = [line for line, _ in shown]
    bp = BillingPeriod.objects.select_related("closed_by").filter(period=stmt.period).first()
    closed = stmt.closed and bp is not None
    card = rate_card_at(bp.rate_card_version) if closed else load_rate_card()
    adjustments = [line for row in payload["results"] for line in row["lines"] if line["kind"] == "adjustment"]
    adjustment_totals: dict[str, Decimal] = defaultdict(Decimal)
    for line, cost in shown:
        if line.kind == "adjustment" and cost is not None:
            adjustment_totals[line.currency] += cost
    return StatementBook(
        period=stmt.period, closed=stmt.closed, closed_at=stmt.closed_at,
        closed_by=bp.closed_by.get_username() if closed and bp.closed_by else None,
        billing_timezone=stmt.zone or billing_zone().key,
        scope=sorted(scope) if scope is not None else None,
        by_team=payload, by_namespace=by_namespace(shown), by_model=by_model(shown),
        adjustments=adjustments,
        freshness=freshness(stmt.period, None if scope is None else {line.cluster for line in seen}),
        rates=rates_used(seen, stmt.period, card), rate_card=rate_card_fields(stmt),
        adjustment_totals={c: present(a, c) for c, a in sorted(adjustment_totals.items())},
        cost_centres=dict(Team.objects.filter(name__in={line.team for line in seen if line.team})
                          .values_list("name", "cost_centre")),
    )


__all__ = ["StatementBook", "statement_book"]
