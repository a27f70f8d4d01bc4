"""`/api/v1/usage/`: usage and money per namespace, team, cluster or GPU model over a window (docs/api.md)."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounting.query.filters import filter_from, iso_utc as iso, parse_choice, window_rules
from apps.accounting.pricing.rates import price_usage_rows_detail
from apps.accounting.core.measures import shown_hours, shown_ratio
from apps.accounting.stored import scope_tag
from apps.accounting.ledger.money import usage_money
from apps.accounting.ledger.answer import usage_version, whole_month, window_cells
from apps.accounting.ledger.as_billed import billed_card, billed_cells
from apps.accounting.usage.cells import FLEET_GROUP_BYS, GROUP_BYS, UsageFilter, group_cells
from apps.teams.access import can_see_money, money_scope, sees_fleet, sees_money_of

from apps.web.rendered import renders_stored

from .stored import stored_response

WINDOW_PARAMS = [
    OpenApiParameter("start", OpenApiTypes.STR, description="ISO 8601 instant or date, years 2000-2100; a date or "
                     "a time without offset is in BILLING_TIMEZONE; default a week ago. The answer echoes "
                     "the window used as UTC instants"),
    OpenApiParameter("end", OpenApiTypes.STR, description="ISO 8601 instant or date, exclusive; default now"),
]

# The rules between start and end, which a schema cannot state for one parameter; each refusal
# is a 400 naming `end` (docs/api.md, "Rules between parameters").
WINDOW_RULES = window_rules()

USAGE_ROW_FIELDS = {
    "key": serializers.CharField(),
    "allocated_gpu_hours": serializers.FloatField(),
    "used_gpu_hours": serializers.FloatField(),
    "idle_gpu_hours": serializers.FloatField(),
    "unallocated_gpu_hours": serializers.FloatField(required=False),
    "efficiency": serializers.FloatField(allow_null=True),
    "mig_instance_hours": serializers.DictField(child=serializers.FloatField()),
    "cost": serializers.CharField(allow_null=True),
    "currency": serializers.CharField(allow_null=True),
    "unpriced_gpu_hours": serializers.FloatField(
        required=False, help_text="allocated hours no rate covers, left out of cost (only on rows whose "
        "money the user may see)"),
}


def priced_rows(user, rows) -> list[bool]:
    """Per row, whether its cost may be shown: every team of its cells is in the user's money
    scope (docs/security.md, "Money scope"). A team lead who is also a viewer gets every team's
    hours, and cost on their own teams' rows only; a row mixing teams (a cluster, a GPU model)
    or holding unassigned or unallocated hours is priced only for a scope of every team."""
    return [sees_money_of(user, {c.team for c in row.cells}) for row in rows]


def money_tag(user) -> str:
    """The part of a stored usage body's key naming whose money it shows."""
    return scope_tag(money_scope(user)) if can_see_money(user) else "none"


def usage_key(group_by: str, money: str, teams) -> str:
    """The stored body's key of a month's usage rows: whose money (`money_tag`), whose rows."""
    return f"usage?group_by={group_by}&money={money}&scope={scope_tag(teams)}"


def usage_payload(request, group_by, usage_filter):
    """The usage rows as the API, the pages and the CSV all show them. For a user who sees money,
    the window is read as billed (`ledger.as_billed`: a closed month's days as its close froze
    them, so beside closed money stand the hours it priced; docs/chargeback.md, "Windows across
    a close") and priced so; otherwise live."""
    money = can_see_money(request.user)
    rows = group_cells(billed_cells(usage_filter, per_day=False) if money else window_cells(usage_filter), group_by)
    shown = priced_rows(request.user, rows)
    # A whole month's money is its ledger's (docs/chargeback.md, "One month, one answer"): only
    # the rows it has no money for are priced from their hours (a closed month's: none, as a rule).
    ledger = month_money(usage_filter, group_by) if any(shown) else None
    live = [ok and (ledger is None or row.key not in ledger.rows) for row, ok in zip(rows, shown)]
    detail = iter(price_usage_rows_detail([r for r, ok in zip(rows, live) if ok], billed_card())
                  if any(live) else [])
    prices = [next(detail) if ok else None for ok in live]
    if ledger:
        prices = [ledger.price(row.key, price) if ok else None for row, price, ok in zip(rows, prices, shown)]
    out = []
    for row, priced in zip(rows, prices):
        cost, currency, unpriced_hours = priced or (None, None, None)
        item = {
            "key": row.key,
            "allocated_gpu_hours": shown_hours(row.allocated_gpu_seconds),
            "used_gpu_hours": shown_hours(row.used_gpu_seconds),
            "idle_gpu_hours": shown_hours(row.idle_gpu_seconds),
        }
        if group_by in FLEET_GROUP_BYS and usage_filter.teams is None:
            # capacity no pod held belongs to no team: only whole-fleet rows carry it
            item["unallocated_gpu_hours"] = shown_hours(row.unallocated_gpu_seconds)
        item["efficiency"] = shown_ratio(row.efficiency)
        item["mig_instance_hours"] = {p: shown_hours(s) for p, s in sorted(row.mig_seconds.items())}
        item["cost"], item["currency"] = cost, currency
        if priced:
            item["unpriced_gpu_hours"] = unpriced_hours
        out.append(item)
    return out


def month_money(f: UsageFilter, group_by: str) -> dict | None:
    """The ledger's money per team or namespace when the window is one whole billing month of
    every cluster; None otherwise (any other window is priced from its own hours)."""
    if f.cluster or f.namespaces is not None or f.gpu_models is not None:
        return None
    period = whole_month(f)
    return usage_money(period, group_by, f.teams) if period else None


class UsageView(APIView):
    @extend_schema(
        parameters=WINDOW_PARAMS + [
            OpenApiParameter("group_by", OpenApiTypes.STR, enum=list(GROUP_BYS), default="namespace",
                             description="what a row is; cluster and gpu_model rows of the whole fleet (no team "
                                         "picked, not a team lead) add unallocated_gpu_hours"),
            OpenApiParameter("cluster", OpenApiTypes.STR, description="cluster name"),
            OpenApiParameter("team", OpenApiTypes.STR, description="one team only (team leads: one of theirs, "
                             "else 403; an unknown team: 404)"),
        ],
        responses=inline_serializer("UsageResponse", {
            "start": serializers.CharField(), "end": serializers.CharField(),
            "group_by": serializers.CharField(), "results": inline_serializer("UsageRow", USAGE_ROW_FIELDS, many=True),
        }),
        description="Allocated, used, idle (and for cluster/gpu_model, unallocated) GPU-hours." + WINDOW_RULES,
    )
    def get(self, request):
        params = request.query_params
        picked = filter_from(params, request.user)
        group_by = parse_choice(params, "group_by", GROUP_BYS, default="namespace")
        f = picked.usage_filter()
        start, end = f.start, f.end

        def answer():
            return {"start": iso(start), "end": iso(end), "group_by": group_by,
                    "results": usage_payload(request, group_by, f)}

        money = can_see_money(request.user)
        stored = usage_version(f, money, scoped=True) if renders_stored(request.accepted_renderer) else None
        if stored is not None:      # a whole month as sent to this set of teams, kept with its version
            period, version = stored
            return stored_response(request, period, usage_key(group_by, money_tag(request.user), f.teams), version,
                                   answer)
        return Response(answer())

    def csv_columns(self, rows):
        group_by = self.request.query_params.get("group_by") or "namespace"
        cols = ["key", "allocated_gpu_hours", "used_gpu_hours", "idle_gpu_hours"]
        whole_fleet = not self.request.query_params.get("team") and sees_fleet(self.request.user)
        if group_by in FLEET_GROUP_BYS and whole_fleet:
            cols.append("unallocated_gpu_hours")
        cols.append("efficiency")
        profiles = sorted({p for r in rows if isinstance(r, dict) for p in r.get("mig_instance_hours", {})})
        cols += [f"mig_instance_hours.{p}" for p in profiles]
        cols += ["cost", "currency"]
        if any(isinstance(r, dict) and "unpriced_gpu_hours" in r for r in rows):
            cols.append("unpriced_gpu_hours")
        if rows and isinstance(rows[0], dict) and "key" not in rows[0]:
            return None  # an error body: let the renderer show its own columns
        return cols
