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
