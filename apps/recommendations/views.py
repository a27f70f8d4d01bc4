"""Pages: /advice/ (quota advice, same rows as the API) and /advice/alerts/."""
from collections import defaultdict
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.shortcuts import render

from apps.accounting.query.filters import DAILY, filter_from
from apps.clusters.models import Cluster
from apps.teams.access import can_see_money, is_admin, money_scope, team_scope
from apps.web.pages import bad_request
from apps.web.params import BadParameters
from apps.web.throttle import throttled_page

from .advice import AdviceQuery, advice_rows
from .models import Alert


def page_query(request, query_of, *, reads=DAILY):
    """(query, its ReportFilter, None), or (None, None, the 400 page) for bad parameters: the query
    string parsed once (`apps.accounting.query.filters`), so an unknown team or cluster is a 404 and a
    team not the user's a 403, as on the API; a user with no team to show gets a 403, on every
    advice page alike."""
    try:
        sel = filter_from(request.GET, request.user, trailing=True, reads=reads)
    except BadParameters as exc:
        return None, None, bad_request(request, exc.detail)
    q = query_of(sel)
    if q.teams is not None and not q.teams:
        raise PermissionDenied("no team to show")
    return q, sel, None


@login_required
@throttled_page
def advice(request):
    q, sel, refused = page_query(request, AdviceQuery.of)
    if refused:
        return refused
    rows = advice_rows(q)
    return render(request, "recommendations/advice.html", {
        "rows": rows, "money": q.money, "cluster": q.cluster, "totals": money_totals(rows) if q.money else [],
        "clusters": Cluster.objects.filter(archived=False).values_list("name", flat=True),
        "window_days": q.window_days or settings.ADVICE_WINDOW_DAYS,
        "csv_url": sel.download_url("/api/v1/quota-recommendations/"),
    })


def money_totals(rows) -> list[dict]:
    """Per currency, what applying every row's advice frees (the lowered quotas) and costs more
    (the raised ones), from each row's `monthly_money_freed` (docs/advice-and-alerts.md)."""
    out = defaultdict(lambda: {"frees": Decimal(0), "costs": Decimal(0), "lowered": 0, "raised": 0})
    for row in rows:
        if row["monthly_money_freed"] is None:
            continue
        freed, t = Decimal(row["monthly_money_freed"]), out[row["currency"]]
        if freed > 0:
            t["frees"] += freed
            t["lowered"] += 1
        elif freed < 0:
            t["costs"] -= freed
            t["raised"] += 1
    return [{"currency": c, **t} for c, t in sorted(out.items())]


@login_required
@throttled_page
def alerts(request):
    scope = team_scope(request.user)
    qs = Alert.objects.prefetch_related("deliveries")
    if scope is not None:
        if not scope:
            raise PermissionDenied("no team to show")
        qs = qs.filter(Q(team__in=scope))
    money = money_scope(request.user)     # never widened by `viewer` (docs/security.md, "Money scope")
    money_alerts = Q(kind__in=(Alert.Kind.BUDGET, Alert.Kind.FORECAST), fields__unit="money")
    if not can_see_money(request.user):
        qs = qs.exclude(money_alerts)
    elif money is not None:
        qs = qs.exclude(money_alerts & ~Q(team__in=money))
    return render(request, "recommendations/alerts.html", {
        "alerts": qs[:500], "money": can_see_money(request.user), "admin": is_admin(request.user),
    })
