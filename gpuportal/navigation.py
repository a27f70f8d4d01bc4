"""The navigation bar, the same on every page that extends base.html: the project's, since it
links the pages of every app (reports, chargeback, advice, the token page). Registered as the
template library `portal_nav` in settings (TEMPLATES OPTIONS "libraries"), so templates/base.html,
which lower apps' pages extend too, loads no app's tag library (tests/repo/test_template_layers.py).

Links keep the picker's cluster / team / dates so a selection follows the user from page to
page. Pages that parsed the picker pass it as `sel`; other pages get the same links from the
user's roles.
"""
import html
from urllib.parse import quote, urlencode

from django import template
from django.utils.safestring import mark_safe

from apps.teams.access import can_see_money, is_admin, team_scope

register = template.Library()

PICKER_KEYS = ("cluster", "team", "start", "end")
PAGES = (
    ("Overview", "/", True),
    ("Explorer", "/explore/", True),
    ("Idle GPUs", "/idle/", True),
    ("Fleet health", "/health/", True),
)


def _active(path: str, href: str) -> bool:
    return path == "/" if href == "/" else path.startswith(href)


@register.inclusion_tag("_nav.html", takes_context=True)
def portal_nav(context):
    request = context.get("request")
    user = context.get("user")
    sel = context.get("sel")
    path = request.path if request else ""
    if sel is not None:
        scope, admin, qs = sel.scope, sel.admin, sel.querystring
        picked_team = sel.team
    else:
        scope, admin = team_scope(user), is_admin(user)
        params = request.GET if request else {}
        qs = urlencode({k: params.get(k) for k in PICKER_KEYS if params.get(k)})
        picked_team = None
    suffix = f"?{qs}" if qs else ""
    links = [(label, href + (suffix if keep else ""), _active(path, href)) for label, href, keep in PAGES]
    teams = [picked_team] if picked_team else sorted(scope or ())
    for name in teams:
        href = f"/teams/{quote(name, safe='')}/"
        links.append((f"Team {name}", href + suffix, path == href))
    if can_see_money(user):     # the page itself shows the user's money scope only
        links.append(("Chargeback", "/chargeback/", _active(path, "/chargeback/")))
    links.append(("Quota advice", "/advice/", path == "/advice/"))
    links.append(("Right-sizing", "/advice/rightsizing/", _active(path, "/advice/rightsizing/")))
    links.append(("Alerts", "/advice/alerts/", _active(path, "/advice/alerts/")))
    if admin:
        links.append(("Ingest log", "/admin-tools/ingest/" + suffix, _active(path, "/admin-tools/ingest/")))
        links.append(("Team claims", "/admin-tools/claims/", _active(path, "/admin-tools/claims/")))
        links.append(("Rates", "/admin-tools/rates/", _active(path, "/admin-tools/rates/")))
    # Every signed-in role may use the API (docs/api.md); the docs page says what each answers.
    links.append(("API docs", "/api/v1/docs/", False))
    links.append(("API tokens", "/account/tokens/", _active(path, "/account/tokens/")))
    if getattr(user, "is_staff", False):
        links.append(("Admin", "/admin/", False))
    return {"links": links}


@register.simple_tag
def picker_options(values, selected):
    """The picker's `<option>`s of a select, `selected` marked (escaped; one join instead of a
    template loop: the team picker of a 250-team fleet was a third of a warm overview's render)."""
    out = []
    for value in values:
        text = html.escape(str(value))      # what django.utils.html.escape returns, without its lazy wrapper
        out.append(f'<option value="{text}"{" selected" if value == selected else ""}>{text}</option>')
    return mark_safe("".join(out))   # every value escaped above
