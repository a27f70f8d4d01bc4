"""Definitions on the page (#43, item 6): the overview says how allocated, used and idle relate
(its tiles did not add up — allocated 1,896.7 ≠ used 1,057.6 + idle 665.0 — and nothing said
why, nor why the chart's "allocated, not used" was not the Idle tile); the quota tables name
their window and say why peak used can stand above the quota.

Seed: tests/support/page_seed.py (train-0 at 75 % then 50 % of an H100: used but never idle for
most of its hours, so used + idle < allocated)."""
import re

import pytest


def text(body):
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", body))


def test_the_overview_defines_its_figures(login):
    body = text(login("viewer").get("/").content.decode())
    assert "How they relate: allocated is the GPU time pods held; used is that time weighted by utilization" in body
    assert "Used and idle do not add up to allocated" in body
    assert "The chart stacks used and allocated, not used (allocated − used), which is more than idle." in body


@pytest.mark.parametrize("url, said", [
    ("/advice/", "over the last 28 days, to each cluster's ingest watermark"),
    ("/advice/", "it can stand above the quota (pods admitted before the quota was lowered keep running)"),
])
def test_the_quota_advice_names_its_window(login, url, said):
    assert said in text(login("admin").get(url).content.decode())


def test_the_team_quota_table_names_its_window(login):
    # the seed has a quota on cv-train (vision's)
    body = text(login("team_lead").get("/teams/vision/").content.decode())
    assert "Over the window shown above (the dates picked)" in body
    assert "Peak used can stand above the quota" in body


def test_a_forecast_without_a_range_says_no_range():
    """#43 P3: "≈ $862.13 ($862.13 – $862.13)" when the month's range had closed to one figure."""
    from decimal import Decimal
    from django.template.loader import render_to_string
    row = {"currency": "USD", "month_to_date": Decimal("800.00"), "projected": Decimal("862.13"),
           "low": Decimal("862.13"), "high": Decimal("862.13"), "weekday_daily": Decimal("10.00"),
           "weekend_daily": Decimal("5.00"), "history_days": 14}
    team = text(render_to_string("reports/_team_forecast.html", {"forecast": {"results": [row], "weekdays_left": 2.0, "weekend_days_left": 1.0, "lookback_days": 14}}))
    assert "$862.13 – $862.13" not in team and "$862.13" in team
    table = text(render_to_string("chargeback/_statement_table.html", {
        "payload": {"results": [{"key": "research", "cost": Decimal("800.00"), "currency": "USD", "forecast": [row],
                                 "allocated_gpu_hours": 1.0, "used_gpu_hours": 0.5, "efficiency": 0.5,
                                 "unpriced_gpu_hours": 0.0}],
                    "totals_by_currency": {}, "adjustments_by_currency": {}}, "running": True,
        "foot": {"allocated_gpu_hours": 1.0, "used_gpu_hours": 0.5, "efficiency": 0.5, "unpriced_gpu_hours": 0.0,
                 "projected": {"USD": Decimal("862.13")}}}))
    assert "≈ $862.13" in table and "($862.13 – $862.13)" not in table
