"""Every surface shows the figure that apps/accounting/core/measures.py defines, for the same data.

One seeded dataset (tests/support/page_seed.py); each surface — usage API and CSV, overview and team
pages, chargeback page, CSV and XLSX, idle API, idle and budget alerts, quota advice — is
compared with the one function applied to the seed's rows, and the function's value with the
number worked out by hand (docs/figures.md has the same worked example).
"""
import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from openpyxl import load_workbook

from apps.accounting.core.periods import period_of
from apps.accounting.core.measures import (IdleHour, efficiency, idle_stretches, longest_idle_seconds, percent_text,
                                     shown_efficiency, shown_hours)
from apps.accounting.models import UsageHour

from tests.support.page_seed import A100, at, day_d
from tests.support.bodies import body_of

H = 3600.0
# vision = cv-train: train-0 on an H100 at 10:00 and 11:00, mig-0 on a 1g.10gb (1/7 GPU) at 10:00
VISION_ALLOC_S = 2 * H + H / 7
VISION_USED_S = 2700 + 1800 + H / 14
# nlp = nlp-dev: notebook-0 two hours (36 s used each), short-0 one hour (180 s used)
NLP_ALLOC_S = 3 * H
NLP_USED_S = 36 + 36 + 180


@pytest.fixture
def window():
    return {"start": day_d().isoformat(), "end": (day_d() + timedelta(days=1)).isoformat()}


def test_the_functions_by_hand():
    # vision: (4500 + 3600/14) / (7200 + 3600/7) = (66600/14) / (54000/7) = 66600/108000 = 0.61666…
    assert shown_efficiency(VISION_USED_S, VISION_ALLOC_S) == 0.616667
    assert shown_hours(VISION_ALLOC_S) == 2.142857
    # nlp: 252 s used of 10,800 allocated = 0.02333…
    assert shown_efficiency(NLP_USED_S, NLP_ALLOC_S) == 0.023333
    assert percent_text(efficiency(NLP_USED_S, NLP_ALLOC_S)) == "2.3 %"
    # the whole window: 5009.14… of 18,514.28… = 0.27056…
    assert percent_text(efficiency(VISION_USED_S + NLP_USED_S, VISION_ALLOC_S + NLP_ALLOC_S)) == "27.1 %"
    # notebook-0 idled through 10:00 and 11:00: one stretch of 2 h, still open at the last hour
    hours = [IdleHour(int(at(10).timestamp()), H, H, H, True), IdleHour(int(at(11).timestamp()), H, H, H, True)]
    assert longest_idle_seconds(hours) == 7200.0 and idle_stretches(hours)[0].open


def idle_rows(pod):
    return [(int(h.timestamp()), p, s, m, w) for h, p, s, m, w in
            UsageHour.objects.filter(pod=pod).order_by("hour_start").values_list(
                "hour_start", "idle_prefix_seconds", "idle_suffix_seconds", "idle_max_run_seconds", "idle_whole_hour")]


def test_usage_api_and_its_csv(login, window):
    c = login("admin")
    rows = {r["key"]: r for r in c.get("/api/v1/usage/", {**window, "group_by": "team"}).json()["results"]}
    assert rows["vision"]["efficiency"] == shown_efficiency(VISION_USED_S, VISION_ALLOC_S)
    assert rows["vision"]["allocated_gpu_hours"] == shown_hours(VISION_ALLOC_S)
    assert rows["nlp"]["efficiency"] == shown_efficiency(NLP_USED_S, NLP_ALLOC_S)
    assert rows["nlp"]["idle_gpu_hours"] == shown_hours(3600 + 3600 + 1200)
    body = c.get("/api/v1/usage/", {**window, "group_by": "team", "format": "csv"}).content.decode()
    lines = {r["key"]: r for r in csv.DictReader(io.StringIO(body))}
    assert float(lines["vision"]["efficiency"]) == shown_efficiency(VISION_USED_S, VISION_ALLOC_S)
    assert float(lines["nlp"]["used_gpu_hours"]) == shown_hours(NLP_USED_S)


def test_overview_and_team_pages(login):
    c = login("admin")
    response = c.get("/")
    totals = response.context["totals"]
    assert totals.efficiency == efficiency(VISION_USED_S + NLP_USED_S, VISION_ALLOC_S + NLP_ALLOC_S)
    assert f'id="kpi-efficiency">{percent_text(totals.efficiency)}<' in response.content.decode()
    teams = {r.key: r for r in response.context["teams"]}
    assert teams["vision"].efficiency == efficiency(VISION_USED_S, VISION_ALLOC_S)
    [day] = response.context["days"]
    assert day.efficiency == totals.efficiency
    models = {m["gpu_model"]: m for m in response.context["models"]}
    assert models[A100]["efficiency"] == efficiency(H / 14, H / 7) == 0.5

    response = c.get("/teams/vision/")
    [ns] = response.context["namespaces"]
    assert ns.efficiency == efficiency(VISION_USED_S, VISION_ALLOC_S)
    assert percent_text(ns.efficiency) in response.content.decode()       # "61.7 %"


def test_chargeback_page_csv_and_xlsx(login):
    c = login("finance")
    period = period_of(day_d())
    expected = shown_efficiency(VISION_USED_S, VISION_ALLOC_S)
    payload = c.get("/api/v1/chargeback/", {"period": period, "group_by": "team"}).json()
    vision = {r["key"]: r for r in payload["results"]}["vision"]
    assert vision["efficiency"] == expected
    # its lines: train-0's H100 hours 4500 / 7200 = 0.625, the MIG slice 0.5
    assert sorted(line["efficiency"] for line in vision["lines"]) == [
        shown_efficiency(H / 14, H / 7), shown_efficiency(4500, 7200)] == [0.5, 0.625]

    body = body_of(c.get("/api/v1/chargeback/", {"period": period, "group_by": "team", "format": "csv"})).decode()
    lines = [r for r in csv.DictReader(io.StringIO(body)) if r["key"] == "vision"]
    assert sorted(float(r["efficiency"]) for r in lines) == [0.5, 0.625]

    sheet = load_workbook(io.BytesIO(c.get("/api/v1/chargeback/xlsx/", {"period": period}).content))["By team"]
    header = [cell.value for cell in sheet[1]]
    rows = {r[0]: dict(zip(header, r)) for r in sheet.iter_rows(min_row=2, values_only=True)}
    assert rows["vision"]["Efficiency"] == expected
    assert rows["nlp"]["Efficiency"] == shown_efficiency(NLP_USED_S, NLP_ALLOC_S)

    page = c.get("/chargeback/", {"period": period}).content.decode()
    assert percent_text(efficiency(VISION_USED_S, VISION_ALLOC_S)) in page


def test_idle_api(login, window):
    pods = {p["pod"]: p for p in login("admin").get("/api/v1/idle/", window).json()["results"]}
    notebook = pods["notebook-0"]
    assert notebook["utilization"] == shown_efficiency(72, 2 * H) == 0.01
    assert notebook["longest_idle_hours"] == shown_hours(longest_idle_seconds(idle_rows("notebook-0"))) == 2.0
    assert pods["train-0"]["longest_idle_hours"] == shown_hours(longest_idle_seconds(idle_rows("train-0")))
    assert pods["train-0"]["longest_idle_hours"] == 0.166667             # the last 10 minutes of 11:00
    assert pods["short-0"]["longest_idle_hours"] == 0.333333             # 20 minutes inside 12:00
    assert pods["train-0"]["utilization"] == shown_efficiency(4500, 2 * H) == 0.625


def test_alerts(seeded, settings):
    from apps.recommendations.alerts import check_budgets, check_idle
    from apps.recommendations.models import Alert, TeamBudget

    settings.ALERT_IDLE_MINUTES = 10
    settings.ALERT_LOOKBACK_HOURS = 24
    check_idle(now=at(13))
    idle = {a.pod: a.fields for a in Alert.objects.filter(kind=Alert.Kind.IDLE)}
    for pod in ("notebook-0", "train-0", "short-0"):
        [stretch] = idle_stretches(idle_rows(pod), min_seconds=600)
        assert idle[pod]["idle_minutes"] == int(stretch.idle_seconds // 60)
        assert idle[pod]["still_idle"] == stretch.open
    assert {p: f["idle_minutes"] for p, f in idle.items()} == {"notebook-0": 120, "train-0": 10, "short-0": 20}

    TeamBudget.objects.create(team_id=seeded["users"]["team_lead"].teams.get().pk, monthly_amount=Decimal("1.00"))
    [raised, *_] = check_budgets(now=at(13))
    assert Decimal(raised.alert.fields["spent"]) == Decimal(str(shown_hours(VISION_ALLOC_S))).quantize(Decimal("0.01"))


def test_quota_advice(login):
    rows = {r["name"]: r for r in login("admin").get("/api/v1/quota-recommendations/").json()["results"]}
    gpu = {r["resource"]: r for r in rows["cv-train"]["resources"]}["requests.nvidia.com/gpu"]
    assert gpu["efficiency"] == shown_efficiency(4500, 2 * H) == 0.625     # whole GPUs only: train-0
    assert rows["nlp-dev"]["efficiency"] == shown_efficiency(NLP_USED_S, NLP_ALLOC_S) == 0.023333
