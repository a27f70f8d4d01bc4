"""The right-sizing page, /advice/rightsizing/: the same rows as /api/v1/rightsizing/."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from apps.accounting.filters import max_window_days
from apps.clusters.models import Cluster
from apps.teams.access import team_scope
from apps.teams.models import Team
from apps.web.throttle import long_read_page, throttled_page

from .views import page_query
from .rightsizing_rows import RightsizeQuery, params_from_settings, rightsizing_rows, total_saving


@login_required
@throttled_page
@long_read_page
def rightsizing(request):
    q, refused = page_query(request, RightsizeQuery.of, hourly=True)   # hourly rows per pod
    if refused:
        return refused
    rows = rightsizing_rows(q)
    scope = team_scope(request.user)
    teams = sorted(scope) if scope is not None else list(Team.objects.order_by("name").values_list("name", flat=True))
    params = params_from_settings()
    return render(request, "recommendations/rightsizing.html", {
        "rows": rows, "money": q.money, "cluster": q.cluster, "team": q.team, "window_days": q.window_days,
        "totals": total_saving(rows) if q.money else [], "clusters": Cluster.objects.values_list("name", flat=True),
        "teams": teams, "headroom": params.headroom, "replicas": params.share_replicas,
        "max_window_days": max_window_days(hourly=True),
        "csv_query": "&".join(f"{k}={v}" for k, v in (("cluster", q.cluster), ("team", q.team),
                                                      ("window_days", q.window_days)) if v),
    })
