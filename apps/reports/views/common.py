"""What every report page shares: sign-in, the picker parsed from the URL, the navigation."""
from datetime import time, timedelta
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import render
from rest_framework.exceptions import ValidationError

from apps.accounting.timeparse import billing_zone
from apps.clusters.models import Cluster
from apps.teams.models import UNASSIGNED, Team
from apps.web.pages import bad_request

from ..selection import selection_from

def report_view(view=None, *, admin_only=False):
    """Sign-in required; the picker parsed (bad values answer 400 with the reason) and scoped."""
    def wrap(fn):
        @login_required
        @wraps(fn)
        def inner(request, *args, **kwargs):
            try:
                sel = selection_from(request)
            except ValidationError as exc:
                return bad_request(request, exc.detail)
            if admin_only and not sel.admin:
                raise PermissionDenied("admins only")
            return fn(request, sel, *args, **kwargs)
        return inner
    return wrap(view) if view else wrap


def page(request, sel, template, active, context):
    """Render a report page with the navigation and picker filled in."""
    zone = billing_zone()
    teams = sorted(Team.objects.values_list("name", flat=True)) + [UNASSIGNED]
    if sel.scope is not None:
        teams = sorted(sel.scope)
    ctx = {
        "sel": sel, "qs": sel.querystring, "active": active,
        "picker_clusters": list(Cluster.objects.values_list("name", flat=True)),
        "picker_teams": teams,
        # The pickers and the window shown are billing-zone dates and times, as typed (docs/dates-and-money.md).
        "picker_start": sel.start.astimezone(zone).date().isoformat(),
        "picker_end": _end_date(sel.end.astimezone(zone)).isoformat(),
        "billing_timezone": zone.key,
        "my_teams": sorted(sel.scope) if sel.scope is not None else None,
    }
    ctx.update(context)
    return render(request, template, ctx)


def _end_date(end):
    """The picker's end date (exclusive, local): a window ending mid-day shows the next day."""
    if end.time() == time.min:
        return end.date()
    return end.date() + timedelta(days=1)


def csv_response(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
