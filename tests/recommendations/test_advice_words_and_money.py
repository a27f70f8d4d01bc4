"""Quota advice a team lead and finance can act on (#14 P2): verdicts in words, no quota of 0
for a resource that was used, and the money the recommendation frees (negative: what the
extra room may cost), by hand from the `fleet` fixture (tests/recommendations/conftest.py).

Before: the YAML set a MIG profile used in fewer than a tenth of the hours to "0" (its P90 is
0), the page showed `over_provisioned`-style codes, and its money column was |hard − applied|
× 730 × rate, the same positive number whether the advice lowers or raises the quota and 0.00
on every row the advice keeps.
"""
import re
from datetime import date, timedelta
from decimal import Decimal

import pytest
import yaml

from apps.recommendations import estimator as est
from apps.recommendations.advice import AdviceQuery, advice_rows
from tests.support.factories import make_rate

from tests.support import factories as f
from .conftest import injected_rate

RATE = (Decimal("2.50"), "EUR")


def test_a_resource_used_at_all_gets_a_target_of_at_least_one():
    # Used 1 instance in 2 of 48 hours: P90 (position 42.3 of 47) is 0, the target is still 1.
    e = est.estimate([0.0] * 46 + [1.0, 1.0])
    assert (e.p90, e.target) == (0.0, 1)
    assert est.estimate([0.0] * 48).target == 0          # never used: 0 stays 0
    assert est.estimate([]).target == 0


def test_money_freed_is_signed_and_money_at_stake_is_its_size():
    # STEADY 4 GPUs for 28 days, quota 16, efficiency 30 %: lower to 5 -> (16 − 5) × 730 × 2.50
    over = est.assess(est.ResourceHistory(resource="requests.nvidia.com/gpu", hourly=[4.0] * 672, hard=16.0,
                                          used=4.0, allocated_gpu_seconds=1000.0, used_gpu_seconds=300.0,
                                          quota_hours=672), rate=RATE)
    assert (over.verdict, over.recommended) == (est.OVER, 5)
    assert over.monthly_money_freed == Decimal("20075.00") == over.monthly_money_at_stake
    assert over.verdict_text == "larger than needed: lower it"
    # a quota of 5 reached a third of the time: raise to max(5, ceil(5.75), 6) = 6 -> −1 × 730 × 2.50
    under = est.assess(est.ResourceHistory(resource="requests.nvidia.com/gpu", hourly=[4.0] * 672, hard=5.0,
                                           used=5.0, allocated_gpu_seconds=1000.0, used_gpu_seconds=900.0,
                                           seconds_at_hard=224 * 3600.0, quota_hours=672), rate=RATE)
    assert (under.verdict, under.recommended) == (est.UNDER, 6)
    assert under.monthly_money_freed == Decimal("-1825.00")
    assert under.monthly_money_at_stake == Decimal("1825.00")
    assert est.VERDICT_TEXT == {est.UNDER: "too small: raise it", est.OVER: "larger than needed: lower it",
                                est.OK: "about right: keep it", est.NO_QUOTA: "no quota: set one"}


def rows_by_name():
    q = AdviceQuery(window_days=2, now=f.END + timedelta(minutes=30))
    return {r["name"]: r for r in advice_rows(q, rate_fn=injected_rate)}


def test_rows_carry_money_freed_and_verdicts_in_words(fleet):
    rows = rows_by_name()
    ml, infer, scratch = rows["ml"], rows["infer"], rows["scratch"]
    assert (ml["verdict_text"], ml["monthly_money_freed"], ml["monthly_money_at_stake"]) == (
        "larger than needed: lower it", "13140.00", "13140.00")           # (16 − 7) × 730 × 2.00
    assert (infer["verdict_text"], infer["monthly_money_freed"], infer["monthly_money_at_stake"]) == (
        "too small: raise it", "-1460.00", "1460.00")                     # (2 − 3) × 730 × 2.00
    assert (scratch["verdict_text"], scratch["monthly_money_freed"]) == ("no quota: set one", None)


def test_a_rarely_used_mig_profile_is_not_set_to_zero(fleet):
    c = fleet["cluster"]
    rare = f.make_device(c, uuid="GPU-rare", model=f.A100, mig_profile="1g.10gb", fraction=1 / 7, instance="3")
    f.make_usage_hours(rare, "rare", "nb-0", f.hours_before(f.END, 2), 1 / 7)      # 1 instance, the last 2 of 48 h
    f.make_usage_hours(f.make_device(c, uuid="GPU-rare-whole"), "rare", "train-0", f.hours_before(f.END, 48), 1)
    row = rows_by_name()["rare"]
    hard = yaml.safe_load(row["yaml"])["spec"]["hard"]
    assert hard == {"requests.nvidia.com/gpu": "2", "requests.nvidia.com/mig-1g.10gb": "1"}


def cells_text(body):
    """The visible text of the advice table's cells (not its class attributes)."""
    table = re.search(r'<table class="data advice">.*?</table>', body, re.S).group(0)
    return [re.sub(r"<[^>]+>", "", td).strip() for td in re.findall(r"<td[^>]*>(.*?)</td>", table, re.S)]


@pytest.mark.parametrize("role", ["finance", "viewer"])
def test_the_page_says_verdicts_and_money_in_words(fleet, client, role):
    make_rate(f.H100, "2.00", currency="EUR", effective_from=date(2026, 1, 1))
    make_rate(f.A100, "0.50", currency="EUR", effective_from=date(2026, 1, 1), mig_profile="1g.10gb")
    client.force_login(f.make_user(role, role))
    body = client.get("/advice/?window_days=2").content.decode()
    text = " | ".join(cells_text(body))
    for code in ("over_provisioned", "under_provisioned", "no_quota"):
        assert code not in text
    assert "Larger than needed: lower it" in text and "Too small: raise it" in text
    assert "No quota: set one" in text and "About right: keep it" not in text
    if role == "finance":
        assert "frees €13,140.00" in text                    # ml: (16 − 7) × 730 × 2.00
        assert "costs €1,460.00 more" in text                # infer: (2 − 3) × 730 × 2.00
        assert "costs €365.00 more" in text                  # mig: (3 − 4) × 730 × 0.50
        assert "no quota to lower" in text                      # scratch
        assert "Money freed / month" in body
    else:
        # the random CSRF token can hold the letters "EUR": read the page without it
        shown = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", body)
        assert "€" not in shown and "EUR" not in shown and "Money freed" not in shown
