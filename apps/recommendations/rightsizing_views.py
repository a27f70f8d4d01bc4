"""The right-sizing page, /advice/rightsizing/: the same rows as /api/v1/rightsizing/."""
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import render
from rest_framework.exceptions import NotFound, ValidationError

from apps.clusters.models import Cluster
from apps.teams.access import team_scope
from apps.teams.models import Team
from apps.web.pages import bad_request

from .rightsizing_query import rightsize_query_for
from .rightsizing_rows import params_from_settings, rightsizing_rows, total_saving


@login_required
def rightsizing(request):
    try:
        q = rightsize_query_for(request)
    except NotFound as exc:
        raise Http404(str(exc.detail))
    except ValidationError as exc:
        return bad_request(request, exc.detail)
    if q.teams is not None and not q.teams:
        raise PermissionDenied("no team to show")
    rows = rightsizing_rows(q)
    scope = team_scope(request.user)
    teams = sorted(scope) if scope is not None else list(Team.objects.order_by("name").values_list("name", flat=True))
    params = params_from_settings()
    return render(request, "recommendations/rightsizing.html", {
        "rows": rows, "money": q.money, "cluster": q.cluster, "team": q.team, "window_days": q.window_days,
        "totals": total_saving(rows) if q.money else [], "clusters": Cluster.objects.values_list("name", flat=True),
        "teams": teams, "headroom": params.headroom, "replicas": params.share_replicas,
        "csv_query": "&".join(f"{k}={v}" for k, v in (("cluster", q.cluster), ("team", q.team),
                                                      ("window_days", q.window_days)) if v),
    })
