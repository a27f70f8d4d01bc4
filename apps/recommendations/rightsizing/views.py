"""The right-sizing page, /advice/rightsizing/: the same rows as /api/v1/rightsizing/, a page at a
time, the largest saving first; the workloads held under a day listed apart (`?show=short`),
out of the headline (docs/advice-and-alerts.md, "What a saving is")."""
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from apps.accounting.query.filters import WORKLOAD_HOURS, filter_from, max_window_days, parse_choice
from apps.clusters.models import Cluster
from apps.teams.access import team_scope
from apps.teams.models import Team
from apps.web.pages import bad_request
from apps.web.params import BadParameters
from apps.web.links import page_links, page_url as _link
from apps.web.paging import page_of, parse_page
from apps.web.throttle import long_read_page, throttled_page

from apps.recommendations.rightsizing.rows import RightsizeQuery, params_from_settings, rightsizing_rows, total_saving, window_said

SHOWS = ("counted", "short")


@login_required
@throttled_page
@long_read_page
def rightsizing(request):
    try:
        sel = filter_from(request.GET, request.user, trailing=True, dates_too=True, reads=WORKLOAD_HOURS)
        show = parse_choice(request.GET, "show", SHOWS, default="counted")
        paging = parse_page(request.GET)
    except BadParameters as exc:
        return bad_request(request, exc.detail)
    q = RightsizeQuery.of(sel)
    if q.teams is not None and not q.teams:
        raise PermissionDenied("no team to show")
    rows = rightsizing_rows(q)
    try:
        shown = page_of([r for r in rows if r["in_totals"] == (show == "counted")], paging)
    except BadParameters as exc:
        return bad_request(request, exc.detail)
    scope = team_scope(request.user)
    teams = sorted(scope) if scope is not None else list(Team.objects.order_by("name").values_list("name", flat=True))
    params = params_from_settings()
    return render(request, "recommendations/rightsizing.html", {
        "rows": shown.rows, "shown": shown, "page_links": page_links(request, shown), "show": show,
        "counted": sum(1 for r in rows if r["in_totals"]), "short": sum(1 for r in rows if not r["in_totals"]),
        "show_links": {s: _link(request, show=None if s == "counted" else s, page=None) for s in SHOWS},
        "money": q.money, "cluster": q.cluster, "team": q.team, "window_days": q.window_days,
        "max_window_days": max_window_days(WORKLOAD_HOURS),
        "start": sel.query.get("start") or "", "end": sel.query.get("end") or "",
        "window": window_said(q),
        "totals": total_saving(rows) if q.money else [],
        "short_totals": total_saving(rows, low_confidence=True) if q.money else [],
        "clusters": Cluster.objects.filter(archived=False).values_list("name", flat=True),
        "teams": teams, "headroom": params.headroom, "replicas": params.share_replicas, "page_size": paging.page_size,
        "csv_url": sel.download_url("/api/v1/rightsizing/"), "api_url": sel.download_url("/api/v1/rightsizing/", None),
    })
