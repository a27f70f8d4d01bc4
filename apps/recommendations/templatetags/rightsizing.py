"""`{% rightsizing_summary %}`: "what you could save" on the quota advice page and a team's
page — the largest right-sizing savings, their total and a link to /advice/rightsizing/
(docs/advice-and-alerts.md, "Right-sizing"). Rows come from `rightsizing_rows`, scoped to the
user's teams, so the block shows exactly what the page and the API show."""
from dataclasses import replace
from datetime import timedelta
from urllib.parse import urlencode

from django import template

from apps.accounting.query.filters import WORKLOAD_HOURS, window_limit
from apps.teams.access import can_see_money, money_covers, money_scope, team_scope

from apps.recommendations.rightsizing.rows import RightsizeQuery
from apps.recommendations.rightsizing.summary import summary

register = template.Library()


@register.inclusion_tag("recommendations/_rightsizing_summary.html", takes_context=True)
def rightsizing_summary(context, team=None, sel=None):
    user = context.get("user")
    if sel is not None and sel.start is not None and sel.end is not None:
        # a team page may show a year; right-sizing measures at most the last MAX_RIGHTSIZING_DAYS
        # of it (docs/security.md, "No request ties up the portal"), and its link opens the same days
        most = timedelta(days=window_limit(WORKLOAD_HOURS)[0])
        if sel.end - sel.start > most:
            sel = replace(sel, start=sel.end - most)
    scope = team_scope(user)
    # money per row, within the user's money scope (docs/security.md, "Money scope"); the totals
    # only when every team the block covers is in it
    paid = money_scope(user)
    money_teams = frozenset(paid) if paid is not None else None
    money = can_see_money(user) and money_covers(money_teams, {team} if team else scope)
    q = RightsizeQuery(cluster=getattr(sel, "cluster", None) or context.get("cluster") or None,
                       teams=frozenset(scope) if scope is not None else None, team=team, money=can_see_money(user),
                       money_teams=money_teams,
                       start=getattr(sel, "start", None), end=getattr(sel, "end", None))
    shown = summary(q) if scope is None or scope else {"rows": [], "more": 0, "workloads": 0, "totals": [],
                                                        "low": 0, "low_totals": [], "window": ""}
    # the full list over the same window, so it shows the same figure (docs/advice-and-alerts.md)
    link = (sel.download_params(team=team) if sel is not None and sel.start is not None
            else {k: v for k, v in (("cluster", q.cluster), ("team", team)) if v})
    return {"rows": shown["rows"], "more": shown["more"], "workloads": shown["workloads"],
            "totals": shown["totals"] if money else [], "money": money,
            "low": shown["low"], "low_totals": shown["low_totals"] if money else [],
            "href": "/advice/rightsizing/" + (f"?{urlencode(link)}" if link else ""),
            "window": shown["window"]}
