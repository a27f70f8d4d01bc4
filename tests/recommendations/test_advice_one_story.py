"""Quota advice that does not contradict itself (#26): one quota to apply, said in words with
the money it frees; the same "peak used" as the team page; the page's money total.

Before: a row read "quota 32, target 6 (apply 32), About right: keep it"; the team page said
notebooks had "Quota 4, Peak used 6" while the advice said usage "reached the hard limit 4";
money at stake was computed only in tests, never shown; the YAML sat in a column cut off at
1,366 px (tests/browser/test_rough_edges_browser.py checks that one in Chromium).
"""
import re
from datetime import date, timedelta

from apps.recommendations.advice import AdviceQuery, advice_rows
from tests.support.factories import make_rate

from tests.support import factories as f
from .conftest import injected_rate
from .test_advice_words_and_money import cells_text


def add_notebooks_and_steady(c):
    hours = f.hours_before(f.END, 48)
    # notebooks: 3 GPUs held all along, quota 4; used counted against it 4 then 6 (a pod admitted
    # before the quota was lowered), at the quota half the time -> too small, raise to max(4, 5, 5)
    f.make_usage_hours(f.make_device(c, uuid="GPU-nb"), "notebooks", "nb-0", hours, 3, efficiency=0.9)
    f.make_quota(c, "notebooks", hours[:24], 4, used=4, seconds_at_hard=3600.0)
    f.make_quota(c, "notebooks", hours[24:], 4, used=6)
    # steady: 4 GPUs, efficiency 90 %, quota 16: above the upper bound 4 × 1.15 × 1.5 = 6.9 but
    # well used -> about right, keep 16 (needed: ceil(4 × 1.15) = 5)
    f.make_usage_hours(f.make_device(c, uuid="GPU-steady"), "steady", "serve-0", hours, 4, efficiency=0.9)
    f.make_quota(c, "steady", hours, 16, used=4)


def test_one_quota_to_apply_and_one_peak(fleet):
    add_notebooks_and_steady(fleet["cluster"])
    rows = {r["name"]: r for r in advice_rows(AdviceQuery(window_days=2, now=f.END + timedelta(minutes=30)),
                                              rate_fn=injected_rate)}
    nb, steady = rows["notebooks"], rows["steady"]
    assert (nb["verdict"], nb["hard"], nb["used_peak"], nb["recommended"]) == ("under_provisioned", 4, 6, 5)
    assert "used stood at the quota of 4 or above it during 50% of the time (peak used 6)" in nb["reason"]
    assert nb["resources"][0]["advice_text"] == "too small: raise it to 5"
    assert (steady["verdict"], steady["target"], steady["recommended"]) == ("ok", 5, 16)
    assert steady["resources"][0]["advice_text"] == "about right: keep 16"
    assert steady["reason"].endswith("keep 16")
    assert rows["ml"]["resources"][0]["advice_text"] == "larger than needed: lower it to 7"
    assert rows["scratch"]["resources"][0]["advice_text"] == "no quota: set one of 2"


def test_the_page_says_the_quota_to_apply_the_peak_and_the_money_in_total(fleet, client):
    add_notebooks_and_steady(fleet["cluster"])
    make_rate(f.H100, "2.00", currency="EUR", effective_from=date(2026, 1, 1))
    make_rate(f.A100, "0.50", currency="EUR", effective_from=date(2026, 1, 1), mig_profile="1g.10gb")
    client.force_login(f.make_user("finance", "finance"))
    body = client.get("/advice/?window_days=2").content.decode()
    assert "(apply" not in body
    cells = cells_text(body)
    i = next(n for n, c in enumerate(cells) if c.startswith("steadyprod"))
    assert cells[i + 1: i + 5] == ["About right: keep 16", "nothing: quota kept", "gpu", "16"]
    assert cells[i + 6] == "5"                           # needed, a figure beside the quota
    j = next(n for n, c in enumerate(cells) if c.startswith("notebooksprod"))
    assert cells[j + 1: j + 7] == ["Too small: raise it to 5", "costs €1,460.00 more",  # (4 − 5) × 730 × 2.00
                                   "gpu", "4", "6", "4"]
    total = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", re.search(r'<p class="advice-total">(.*?)</p>', body,
                                                                 re.S).group(1)))
    # frees: ml (16 − 7) × 730 × 2 = 13,140 + empty 8 × 730 × 2 = 11,680 -> 24,820.00 on 2 quotas;
    # costs: infer 1,460 + mig 365 + notebooks 1,460 = 3,285.00 on 3
    assert total == ("Applying all of it: frees €24,820.00 a month on 2 quotas lowered; "
                     "costs €3,285.00 more a month on 3 quotas raised.")


def test_the_team_page_peak_is_the_advice_peak(fleet, client):
    c = fleet["cluster"]
    add_notebooks_and_steady(c)
    f.assign(c, "notebooks", "research", since=date(2026, 1, 1))
    client.force_login(f.make_user("admin", "admin"))
    body = client.get("/teams/research/?start=2026-11-18&end=2026-11-20").content.decode()
    table = re.search(r'<table class="data" id="quota">.*?</table>', body, re.S).group(0)
    row = re.search(r"<tr><td>notebooks</td>(.*?)</tr>", table, re.S).group(1)
    assert re.findall(r'<td class="num">([^<]*)</td>', row)[:2] == ["4", "6"]   # quota 4, peak used 6
