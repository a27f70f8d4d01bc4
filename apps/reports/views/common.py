"""What every report page shares: sign-in, the picker parsed from the URL, the navigation."""
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from apps.accounting.stored import versions_read_once
from apps.accounting.query.filters import DAILY, filter_from
from apps.accounting.usage.team_mapping import cluster_names, team_names
from apps.accounting.calendar.zone import billing_zone
from apps.teams.models import UNASSIGNED
from apps.web.pages import bad_request
from apps.web.params import BadParameters
from apps.web.throttle import throttled_page

from apps.accounting.query import presets


def report_view(view=None, *, admin_only=False, reads=DAILY):
    """Sign-in required; throttled per user as the API is (docs/security.md, "Throttling"); the
    picker parsed (bad values answer 400 with the reason) and scoped. `reads`: what the page reads,
    which sets its window's limit (`query.filters.window_limit`)."""
    def wrap(fn):
        @login_required
        @throttled_page
        @wraps(fn)
        def inner(request, *args, **kwargs):
            try:
                sel = filter_from(request.GET, request.user, page=True, reads=reads)
            except BadParameters as exc:
                return bad_request(request, exc.detail)
            if admin_only and not sel.admin:
                raise PermissionDenied("admins only")
            if request.method not in ("GET", "HEAD"):
                return fn(request, sel, *args, **kwargs)
            with versions_read_once():      # a page's parts share each version they read
                return fn(request, sel, *args, **kwargs)
        return inner
    return wrap(view) if view else wrap


PICKER_FIELDS = ("cluster", "team", "dates")


def _input_dates(sel, zone):
    return presets.input_dates(sel.query["start"], sel.query["end"], sel.start, sel.end, zone)


def picker_dates(sel) -> tuple[str, str]:
    """The picker's start and end dates as the page shows them (what its links carry)."""
    start_date, end_date = _input_dates(sel, billing_zone())
    return start_date.isoformat(), end_date.isoformat()


def page(request, sel, template, active, context, *, picker=PICKER_FIELDS, picker_team=None):
    """Render a report page with the navigation and picker filled in. `picker`: the fields the
    page's figures follow — only those are offered (a picker that filters nothing is not
    shown; an empty one hides the bar); `picker_team`: the team a page is about (the team
    page), shown as picked."""
    teams = team_names() + [UNASSIGNED]
    if sel.scope is not None:
        teams = sorted(sel.scope)
    # The pickers and the window shown are billing-zone dates and times (docs/dates-and-money.md).
    zone = billing_zone()
    start_date, end_date = _input_dates(sel, zone)
    ctx = {
        "sel": sel, "qs": sel.querystring, "active": active,
        "picker_clusters": cluster_names(),
        "picker_teams": teams,
        "picker_start": start_date.isoformat(), "picker_end": end_date.isoformat(),
        "picker_presets": preset_links(request, sel),
        "picker_window": presets.window_text(sel.start, sel.end, zone),
        "billing_timezone": zone.key,
        "my_teams": sorted(sel.scope) if sel.scope is not None else None,
        "picker": frozenset(picker), "picker_team": picker_team or sel.team,
    }
    ctx.update(context)
    return render(request, template, ctx)


# Not kept by a preset link: the dates it sets, the page of a list, a download.
_DROPPED_BY_PRESETS = ("start", "end", "page", "format")


def preset_links(request, sel):
    """(label, href, current) per date preset, keeping every other parameter of the page.
    The default preset's link carries no dates, so it stays "the last 7 days" when shared."""
    keep = request.GET.copy()
    for key in _DROPPED_BY_PRESETS:
        keep.pop(key, None)
    links = []
    for p in presets.presets(sel.today):
        q = keep.copy()
        if p.key != presets.DEFAULT:
            q["start"], q["end"] = p.start.isoformat(), p.end.isoformat()
        links.append((p.label, f"?{q.urlencode()}" if q else request.path, p.key == sel.preset))
    return links

