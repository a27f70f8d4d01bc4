"""The figures each page shows, against numbers computed by hand from tests/support/page_seed.py."""
import csv
import io
import re

import pytest

from gpuportal.oidc import roles_from_claims

from tests.support.page_seed import A100, H100, day_d, usage
from tests.support.bodies import body_of

H = 3600.0
VISION_ALLOC_S = 7200 + H / 7          # train-0 two hours + the 1/7 MIG slice for one hour
VISION_USED_S = 2700 + 1800 + H / 14
NLP_ALLOC_S = 3 * H
NLP_USED_S = 36 + 36 + 180


def rows_of(body, table_id):
    table = re.search(rf'<table[^>]*id="{table_id}".*?</table>', body, re.S).group(0)
    rows = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("<tbody>")[1], re.S):
        rows.append([re.sub(r"<[^>]+>", "", td).strip() for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)])
    return rows


MONEY_HEADERS = {"Cost", "Idle cost", "Unallocated cost"}


def headers_of(body, table_id):
    table = re.search(rf'<table[^>]*id="{table_id}".*?</table>', body, re.S).group(0)
    return [re.sub(r"<[^>]+>", "", th).strip() for th in re.findall(r"<th[^>]*>(.*?)</th>", table.split("</thead>")[0], re.S)]


def usage_rows_of(body, table_id):
    """The rows without their money columns (roles that see money get a cost beside each figure)."""
    keep = [h not in MONEY_HEADERS for h in headers_of(body, table_id)]
    return [[cell for cell, k in zip(row, keep) if k] if len(row) == len(keep) else row for row in rows_of(body, table_id)]


def test_overview_totals_efficiency_and_stale_warning(login):
    body = login("admin").get("/").content.decode()
    used = VISION_USED_S + NLP_USED_S
    allocated = VISION_ALLOC_S + NLP_ALLOC_S
    assert re.search(r'id="kpi-efficiency">%.1f %%<' % (100 * used / allocated), body)
    day = usage_rows_of(body, "daily")[0]
    assert day == [day_d().isoformat(), f"{(allocated + H) / H:.2f}", f"{allocated / H:.2f}", f"{used / H:.2f}",
                   f"{(600 + 3600 + 3600 + 1200) / H:.2f}", f"{100 * used / allocated:.1f} %"]
    assert "Stale data:" in body and "beta" in re.search(r'class="warning stale-warning".*?</p>', body, re.S).group(0)
    teams = {r[0]: r for r in usage_rows_of(body, "teams")}
    assert teams["vision"][4] == f"{100 * VISION_USED_S / VISION_ALLOC_S:.1f} %"
    assert teams["nlp"][3] == f"{(3600 + 3600 + 1200) / H:.2f}"
    models = {r[0]: r for r in usage_rows_of(body, "models")}
    assert models[H100][1:5] == ["6.00", "5.00", f"{(4500 + NLP_USED_S) / H:.2f}", "1.00"]
    assert body.count('class="plotly-graph-div"') == 4


def test_team_dashboard_figures(login):
    body = login("finance").get("/teams/vision/").content.decode()
    ns = usage_rows_of(body, "namespaces")
    assert ns == [["cv-train", f"{VISION_ALLOC_S / H:.2f}", f"{VISION_USED_S / H:.2f}", f"{600 / H:.2f}",
                   f"{100 * VISION_USED_S / VISION_ALLOC_S:.1f} %"]]
    assert rows_of(body, "mig") == [["1g.10gb", "1.00"]]
    assert rows_of(body, "quota") == [["cv-train", "4", "4", "0.5"]]
    costs = rows_of(body, "costs")
    assert [c[0].split(" (")[0] for c in costs] == ["Month to date", "Last month"]
    # Usage is this month (or, in a month's first two days, last month); no rate card here.
    # Columns: period, cost (right after it: on a phone it stays on screen), allocated GPU-h, adjustments (none: "–").
    assert [c[3] for c in costs] == ["–", "–"]
    assert sorted(c[1] for c in costs) == ["no usage", "not priced yet"] or \
        sorted(c[1] for c in costs) == ["no usage", "unpriced"]
    assert body.count('class="plotly-graph-div"') == 3


def test_explorer_table_and_csv_hold_the_same_rows(login):
    c = login("admin")
    body = c.get("/explore/").content.decode()
    table = usage_rows_of(body, "explore-rows")
    d = day_d().isoformat()
    assert table == [
        [d, "alpha", "nlp", "nlp-dev", H100, "3.00", f"{NLP_USED_S / H:.2f}", f"{8400 / H:.2f}",
         f"{100 * NLP_USED_S / NLP_ALLOC_S:.1f} %"],
        [d, "alpha", "vision", "cv-train", A100, f"{1 / 7:.2f}", f"{1 / 14:.2f}", "0.00", "50.0 %"],
        [d, "alpha", "vision", "cv-train", H100, "2.00", "1.25", f"{600 / H:.2f}", "62.5 %"],
    ]
    link = re.search(r'href="([^"]+)" download id="csv-link"', body).group(1).replace("&amp;", "&")
    response = c.get(link)
    assert response["Content-Type"].startswith("text/csv")
    lines = list(csv.DictReader(io.StringIO(body_of(response).decode())))
    assert [(r["team"], r["gpu_model"], r["efficiency"]) for r in lines] == [
        ("nlp", H100, str(round(NLP_USED_S / NLP_ALLOC_S, 6))), ("vision", A100, "0.5"), ("vision", H100, "0.625")]
    assert float(lines[2]["allocated_gpu_hours"]) == 2.0


def test_explorer_filters_and_grains(login):
    c = login("admin")
    assert len(rows_of(c.get("/explore/?gpu_model=" + A100).content.decode(), "explore-rows")) == 1
    hourly = rows_of(c.get("/explore/?grain=hour&namespace=cv-train").content.decode(), "explore-rows")
    assert [(r[0][-5:], r[4], r[5]) for r in hourly] == [("10:00", A100, "0.14"), ("10:00", H100, "1.00"),
                                                           ("11:00", H100, "1.00")]
    weekly = rows_of(c.get("/explore/?grain=week&team=vision").content.decode(), "explore-rows")
    assert len(weekly) == 2 and all(r[2] == "vision" for r in weekly)


def test_heatmap_has_team_by_day_efficiency(login):
    body = login("admin").get("/explore/").content.decode()
    assert '"type":"heatmap"' in body
    assert str(VISION_USED_S / VISION_ALLOC_S)[:7] in body   # vision's one day: 0.61666...


def test_idle_api_ranks_pods_with_longest_stretch(login):
    c = login("admin")
    # The API ranks every pod with idle GPU-time; the page's listing filter is opt-in here.
    everything = c.get("/api/v1/idle/").json()
    assert everything["max_utilization"] == 1.0 and everything["min_idle_minutes"] == 0.0
    ranked = [r["pod"] for r in everything["results"]]
    assert ranked[0] == "notebook-0" and "short-0" in ranked
    idle_hours = [r["idle_gpu_hours"] for r in everything["results"]]
    assert idle_hours == sorted(idle_hours, reverse=True) and all(h > 0 for h in idle_hours)
    data = c.get("/api/v1/idle/?max_utilization=0.1&min_idle_minutes=30").json()
    assert data["max_utilization"] == 0.1 and data["min_idle_minutes"] == 30.0
    assert data["results"] == [{
        "cluster": "alpha", "namespace": "nlp-dev", "pod": "notebook-0", "team": "nlp", "node": "node-a",
        "gpus_held": 1.0, "idle_gpu_hours": 2.0, "allocated_gpu_hours": 2.0, "used_gpu_hours": 0.02,
        "utilization": 0.01, "longest_idle_hours": 2.0,
    }]
    # 20 minutes of idle stretch is under the 30-minute default; lowering it lists short-0 second.
    pods = [r["pod"] for r in c.get("/api/v1/idle/?max_utilization=0.1&min_idle_minutes=10").json()["results"]]
    assert pods == ["notebook-0", "short-0"]
    assert c.get("/api/v1/idle/?max_utilization=0.005").json()["results"] == []
    text = c.get("/api/v1/idle/?format=csv").content.decode()
    assert text.splitlines()[0].startswith("cluster,namespace,pod,team,node,gpus_held,idle_gpu_hours")


def test_idle_stretch_joins_across_devices_per_pod_not_across_them(login, seeded):
    gpu0, gpu1, _ = seeded["devices"]
    # A two-GPU pod idle for 40 minutes on each GPU, in different hours: longest stretch 40 min, not 80.
    usage(gpu0, "nlp-dev", "two-gpu", 14, 3600, 0, 2400, idle_max_run_seconds=2400)
    usage(gpu1, "nlp-dev", "two-gpu", 15, 3600, 0, 2400, idle_max_run_seconds=2400)
    rows = {r["pod"]: r for r in login("admin").get("/api/v1/idle/").json()["results"]}
    assert rows["two-gpu"]["gpus_held"] == 2.0
    assert rows["two-gpu"]["longest_idle_hours"] == round(2400 / H, 6)


def test_idle_page_lists_pods_and_unallocated_capacity(login):
    body = login("viewer").get("/idle/").content.decode()
    assert [r[0] for r in rows_of(body, "idle-pods")] == ["notebook-0"]
    unalloc = {r[1]: r for r in rows_of(body, "unallocated")}
    assert unalloc[H100][2:] == ["6.00", "1.00", "16.7 %"]
    assert unalloc[A100][2:] == [f"{1 / 7:.2f}", "0.00", "0.0 %"]


def test_health_flags_hot_and_xid_gpus_and_energy_per_team(login):
    body = login("admin").get("/health/").content.decode()
    flagged = {r[2]: r for r in rows_of(body, "flagged")}
    assert set(flagged) == {"0", "1"} and all(r[1] == "node-a" for r in flagged.values())
    assert flagged["1"][4] == "79" and "XID" in flagged["1"][8]
    assert flagged["0"][6] == "86" and flagged["0"][7] == "20" and "hot" in flagged["0"][8]
    month = day_d().strftime("%Y-%m")
    assert rows_of(body, "energy") == [[month, "nlp", "2.00"], [month, "vision", "1.00"]]


def test_health_for_team_lead_shows_only_devices_their_pods_held(login):
    body = login("team_lead").get("/health/").content.decode()
    assert {(r[1], r[2]) for r in rows_of(body, "devices")} == {("node-a", "0"), ("node-b", "0 MIG 1")}
    assert rows_of(body, "energy") == [[day_d().strftime("%Y-%m"), "vision", "1.00"]]


def add_many_pods(seeded, n=25):
    gpu0, gpu1, _ = seeded["devices"]
    for i in range(n):
        usage(gpu0 if i % 2 else gpu1, "nlp-dev", f"extra-{i}", 16 + i % 6, 600, 0, 600, idle_max_run_seconds=3000)


# The caps hold whatever the number of pods, devices or days (add_many_pods adds 25 pods): a
# few aggregate queries per figure, plus session/user/roles and, for roles that see money, one
# load of the rate card. The team page is the dearest: it reads usage twice (the window, and
# this month vs last) and resolves teams a third time for quotas and moves, each resolver
# reading the clusters' label trust too.
@pytest.mark.parametrize("url", ["/", "/teams/vision/", "/explore/", "/explore/?grain=hour", "/idle/", "/health/",
                                 "/admin-tools/ingest/", "/api/v1/idle/", "/explore/?format=csv"])
def test_report_views_run_a_bounded_number_of_queries(login, seeded, django_assert_max_num_queries, url):
    c = login("admin")
    add_many_pods(seeded)
    if url.startswith("/teams/"):
        c.get(url)      # the months' ledgers: a first read computes and stores their answers (once per change)
    with django_assert_max_num_queries(TEAM_PAGE_CAP if url.startswith("/teams/") else 25):
        assert c.get(url).status_code == 200


# The team page reads two months' ledgers (this month's and last month's statements, through
# their stored answers, docs/chargeback.md "One month, one answer") and, for the forecast, the
# ingest watermark and the namespaces' owners, and ends with right-sizing's "What you could save"
# (clusters, team mappings, the per-workload aggregate, the rates: six queries,
# docs/advice-and-alerts.md): a fixed number of queries more than the others, whatever the pods.
TEAM_PAGE_CAP = 38


@pytest.mark.parametrize("url", ["/", "/teams/vision/", "/explore/", "/idle/", "/health/"])
def test_team_lead_views_run_a_bounded_number_of_queries(login, seeded, django_assert_max_num_queries, url):
    c = login("team_lead")
    add_many_pods(seeded)
    if url.startswith("/teams/"):
        c.get(url)
    with django_assert_max_num_queries(TEAM_PAGE_CAP + 1 if url.startswith("/teams/") else 26):
        assert c.get(url).status_code == 200


def test_oidc_roles_come_from_the_group_claim():
    assert roles_from_claims({"groups": ["finance", "staff"]}, "groups") == {"finance"}
    assert roles_from_claims({"roles": "viewer"}, "roles") == {"viewer"}
    assert roles_from_claims({}, "groups") == set()


def test_idle_api_answers_csv_by_accept_header_and_is_in_the_schema(login):
    c = login("admin")
    response = c.get("/api/v1/idle/", HTTP_ACCEPT="text/csv")
    assert response["Content-Type"].startswith("text/csv")
    assert response.content.decode().splitlines()[1].startswith("alpha,nlp-dev,notebook-0,nlp,node-a,1.0,2.0")
    schema = c.get("/api/v1/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/v1/idle/" in schema and "min_idle_minutes" in schema


def test_every_chart_carries_plotly_whites_template_as_plotly_would_set_it():
    """Charts take the template's JSON made once, not plotly's per-figure template copy
    (docs/performance.md, "Pages"): the layout must be what `update_layout(template=…)` gives."""
    import json

    import plotly.graph_objects as go

    from apps.reports import charts

    fragment = charts.efficiency_trend([type("Day", (), {"day": "2026-03-01", "efficiency": 0.5})(),
                                         type("Day", (), {"day": "2026-03-02", "efficiency": 0.25})()])
    spec = json.loads(re.search(r'<script type="application/json"[^>]*>(.*?)</script>', fragment, re.S).group(1))
    plotly_way = go.Figure()
    plotly_way.update_layout(template="plotly_white")
    assert spec["layout"]["template"] == json.loads(plotly_way.to_json())["layout"]["template"]
    assert spec["data"][0]["y"] == [0.5, 0.25] and spec["layout"]["height"] == 320
