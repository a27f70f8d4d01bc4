"""Shared idle cost: a cluster's unallocated GPU-hours spread over the teams that used the cluster,
in proportion to their cost, when a statement is read with `shared_idle=spread` (docs/chargeback.md,
"2. Review the month"). No Django.
"""
from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from apps.accounting.core.lines import Line
from apps.accounting.core.rounding import apportion


def spread_shared_idle(lines: list[Line]) -> list[Line]:
    """Spread unallocated cost over teams in proportion to their allocated cost, per cluster,
    GPU model and currency. Unallocated cost with no team to carry it (nobody used
    that model there) stays as an unallocated line; unpriced unallocated hours stay too."""
    team_cost = defaultdict(lambda: defaultdict(Decimal))   # (cluster, model, currency) -> team -> cost
    idle_cost = defaultdict(Decimal)
    idle_shown = defaultdict(Decimal)     # the same lines' shown costs, when they are rounded
    rounded = True
    kept = []
    for line in lines:
        group = (line.cluster, line.gpu_model, line.currency)
        if line.kind == "usage" and line.cost is not None:
            team_cost[group][line.team] += line.cost
        if line.kind == "unallocated" and line.cost is not None:
            idle_cost[group] += line.cost
            idle_shown[group] += line.shown or Decimal(0)
            rounded = rounded and line.shown is not None
    spread_groups = {g for g, c in idle_cost.items() if sum(team_cost[g].values(), Decimal(0)) > 0}
    for line in lines:
        group = (line.cluster, line.gpu_model, line.currency)
        if line.kind == "unallocated" and line.cost is not None and group in spread_groups:
            continue
        kept.append(line)
    for group in sorted(spread_groups):
        cluster, model, currency = group
        teams = sorted(team_cost[group].items())
        total = sum((cost for _, cost in teams), Decimal(0))
        shares = [idle_cost[group] * cost / total for _, cost in teams]
        # Rounded lines hand their shown cents on, split by largest remainder: spreading moves
        # money between rows and never changes the total (docs/chargeback.md, "Rounding").
        shown = apportion(idle_shown[group], shares, currency) if rounded else [None] * len(teams)
        for (team, _), share, amount in zip(teams, shares, shown):
            kept.append(Line(kind="shared_idle", team=team, cluster=cluster, namespace="", gpu_model=model,
                             mig_profile="", price_class="", rate_basis="", hourly_rate=None, currency=currency,
                             fixed_cost=share, shown=amount))
    return sorted(kept, key=Line.sort_key)
