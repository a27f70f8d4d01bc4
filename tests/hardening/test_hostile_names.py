"""Team, namespace, pod and cluster names carrying HTML are escaped on every page, for every
role, and cannot break out of the <script> that carries a plotly figure's JSON."""
import pytest
from django.utils.html import escape

from .seed import Names
from .test_access_matrix import EXPECT, fill

NAMES = Names(
    team_a='"><img src=x onerror=alert(1)>',
    ns_a="</script><script>alert(2)</script>",
    pod_a="<svg onload=alert(3)>",
    team_b="<b onmouseover=alert(4)>zebra</b>",
    ns_b="zebra'><iframe src=javascript:alert(5)>",
    pod_b="zebra-pod<script>alert(6)</script>",
    cost_centre_a="<i>cc</i>",
    cluster="east<script>alert(7)</script>",
)
RAW = ["<img src=x", "<script>alert", "<svg onload", "<b onmouseover", "<iframe", "<i>cc</i>", "onerror=alert(1)>"]


def pages(world):
    urls = [fill(u, world) for _, (_, st, us) in EXPECT.items() for u in us
            if not u.startswith("/api/") and "format=" not in u]
    n = world.names
    return urls + [f"/explore/?grain=hour&namespace={n.ns_a}", "/idle/?max_utilization=1&min_idle_minutes=0",
                   f"/chargeback/?period={world.open_period}&team={n.team_b}",
                   f"/chargeback/?period={world.closed_period}&team={n.team_a}",
                   "/admin/teams/team/", "/admin/teams/namespace/", "/admin/recommendations/alert/"]


@pytest.mark.parametrize("role", ["admin", "team_lead", "viewer"])
def test_html_in_names_is_escaped_on_every_page(as_role, world, role):
    c = as_role(role)
    rendered = 0
    for url in pages(world):
        response = c.get(url)
        assert response.status_code < 500, f"{url}: {response.status_code}"
        if response.status_code != 200:
            continue
        if not response["Content-Type"].startswith("text/html"):
            # JSON and text probes (/healthz, /metrics, CSV) are not rendered as HTML by a browser;
            # ReDoc's bundle (/api-docs-assets/) is a fixed script with no name in it
            assert response["Content-Type"].split(";")[0] in (
                "application/json", "text/plain", "text/csv", "application/openmetrics-text", "text/javascript"), url
            assert response["X-Content-Type-Options"] == "nosniff", url  # no sniffing it into HTML
            continue
        body = response.content.decode()
        rendered += 1
        for raw in RAW:
            assert raw not in body, f"{role} {url}: {raw!r} unescaped"
        # A figure's JSON sits inside <script>: only the page's own closing tags may appear.
        assert body.count("</script>") == body.count("<script"), f"{role} {url}: </script> breakout"
    assert rendered >= 10


def test_the_names_do_reach_the_pages_escaped(as_role, world):
    """The control: the hostile names are on the pages, escaped (so the test above means something)."""
    c = as_role("admin")
    bodies = "".join(c.get(url).content.decode() for url in [
        "/", "/explore/", "/idle/?max_utilization=1&min_idle_minutes=0", "/advice/alerts/", "/advice/"])
    for name in (world.names.team_a, world.names.ns_a, world.names.pod_a, world.names.cluster):
        assert escape(name) in bodies, f"{name!r} is not shown (escaped) anywhere"


def test_figure_json_carries_the_names_as_text(as_role, world):
    """The team page plots its namespaces: the figure JSON holds the hostile namespace name as
    text plotly shows literally (`&lt;`), never as markup plotly would render — its labels and
    hover text understand `<a href>` — and its '/' escaped so no </script> can end the script."""
    body = as_role("admin").get(f"/teams/{world.names.team_a}/").content.decode()
    assert "data-plotly-for" in body
    assert "\\u0026lt;/script\\u0026gt;\\u0026lt;script\\u0026gt;alert(2)" in body
    assert not [raw for raw in RAW if as_json(raw) in body]


@pytest.mark.parametrize("role", ["admin", "team_lead"])
def test_no_figure_carries_markup(as_role, world, role):
    c = as_role(role)
    for url in pages(world):
        response = c.get(url)
        body = response.content.decode()
        if response.status_code == 200 and "data-plotly-for" in body:
            assert not [raw for raw in RAW if as_json(raw) in body], f"{role} {url}: markup in a figure"


def as_json(raw: str) -> str:
    """How a figure's JSON would spell the raw markup (`<` as \\u003C; only the portal's own
    hover markup, `<br>` and `<extra>`, may appear so)."""
    return raw.replace("<", "\\u003C").replace(">", "\\u003E").replace("&", "\\u0026").replace('"', '\\"')
