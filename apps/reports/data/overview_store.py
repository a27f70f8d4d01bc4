"""The overview's figures of a whole billing month for the whole fleet, kept as a stored month
answer (docs/performance.md, "Stored month answers"): computed once per version of the month's
inputs, then read back in one query. Stored as JSON (no code runs on reading it back); every
figure is rebuilt as the same object the page computes, so the template cannot tell them apart.
"""
from __future__ import annotations

import json
from dataclasses import asdict, fields
from datetime import date
from decimal import Decimal

from apps.accounting.stored import month_body
from apps.accounting.ledger.answer import usage_version
from apps.accounting.usage.cells import UsageFilter, UsageRow

from ..fragments import digest, fragment
from ..money import Priced
from .overview import DayTotals

KEY = "overview-page"


FIGURES = ("fig_fleet", "fig_efficiency", "fig_idle_teams", "fig_models")   # chart fragments (HTML + JSON)


def kept_or_computed(f: UsageFilter, money: bool, fleet: bool, compute) -> dict:
    """`compute()`'s figures; for the whole fleet over a whole month, the stored ones of the
    month's current version (stored first when missing or stale)."""
    kept = usage_version(f, priced=money)
    if kept is None:
        return compute()
    period, version = kept
    stored = month_body(period, f"{KEY}?money={int(money)}&fleet={int(fleet)}", version, lambda: _dumps(compute()))
    return _loads(bytes(stored))


def kept_html(f: UsageFilter, money: bool, fleet: bool, qs: str, compute, render) -> str:
    """The figures rendered as HTML, `render(figures)`; for the whole fleet over a whole month, a
    stored fragment (`fragments.fragment`) at the figures' version, so a warm view renders no
    table at all. Its key names the view (money, fleet) and the page's query string in its one
    canonical spelling (its links carry it; `ReportFilter.canonical_querystring`, so respelling a
    month never stores another body); the fragment layer adds the money locale and the templates'
    and filters' source."""
    kept = usage_version(f, priced=money)
    if kept is None:
        return render(compute())
    period, version = kept
    return fragment(period, f"{KEY}-html", version, [("money", int(money)), ("fleet", int(fleet)), ("qs", digest(qs))],
                    FRAGMENT_TEMPLATES, lambda: render(kept_or_computed(f, money, fleet, compute)))


FRAGMENT_TEMPLATES = ("reports/_overview_figures.html", "reports/_chart.html")


def _row(r: UsageRow) -> dict:
    return {k.name: getattr(r, k.name) for k in fields(UsageRow) if k.name != "cells"}


def _priced(p: Priced | None):
    if p is None:
        return None
    return {"cost": _dec(p.cost), "idle_cost": _dec(p.idle_cost), "currency": p.currency,
            "unpriced_gpu_hours": p.unpriced_gpu_hours, "mixed": p.mixed}


def _dec(v):
    return None if v is None else str(v)


def _dumps(data: dict) -> bytes:
    out = {
        "days": [{**asdict(d), "day": d.day.isoformat()} for d in data["days"]],
        "teams": [_row(r) for r in data["teams"]],
        "idle_teams": [_row(r) for r in data["idle_teams"]],
        "models": data["models"],
        "total_cost": _priced(data["total_cost"]),
        "day_costs": [_priced(p) for _, p in data["day_rows"]],
        "team_costs": [_priced(p) for _, p in data["team_rows"]],
        "model_costs": [[_priced(p), _priced(u)] for _, p, u in data["model_rows"]],
        **{name: data[name] for name in FIGURES},
    }
    return json.dumps(out).encode()


def _loads(raw: bytes) -> dict:
    data = json.loads(raw)
    days = [DayTotals(**{**d, "day": date.fromisoformat(d["day"])}) for d in data["days"]]
    teams = [UsageRow(**r) for r in data["teams"]]
    models = data["models"]
    return {
        "days": days, "teams": teams, "idle_teams": [UsageRow(**r) for r in data["idle_teams"]], "models": models,
        "total_cost": _priced_back(data["total_cost"]),
        "day_rows": [(d, _priced_back(p)) for d, p in zip(days, data["day_costs"])],
        "team_rows": [(t, _priced_back(p)) for t, p in zip(teams, data["team_costs"])],
        "model_rows": [(m, _priced_back(p), _priced_back(u)) for m, (p, u) in zip(models, data["model_costs"])],
        **{name: data[name] for name in FIGURES},
    }


def _priced_back(p):
    if p is None:
        return None
    return Priced(cost=_dec_back(p["cost"]), idle_cost=_dec_back(p["idle_cost"]), currency=p["currency"],
                  unpriced_gpu_hours=p["unpriced_gpu_hours"], mixed=p["mixed"])


def _dec_back(v):
    return None if v is None else Decimal(v)
