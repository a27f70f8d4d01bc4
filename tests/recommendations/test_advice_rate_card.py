"""Money at stake and money budgets through the real rate card (apps.accounting.pricing.rates)."""
from datetime import date, timedelta
from decimal import Decimal

import pytest

from apps.recommendations.advice import AdviceQuery, advice_rows
from apps.recommendations.alerts import check_budgets
from apps.recommendations.models import TeamBudget

from tests.support import factories as f

Rate = pytest.importorskip("apps.accounting.models.rates").Rate


@pytest.fixture
def rates(fleet):
    for model, rate in ((f.H100, "2.00"), (f.A100, "1.40")):
        Rate.objects.create(gpu_model=model, price_class="on_demand", hourly_rate=Decimal(rate), currency="EUR",
                            effective_from=date(2026, 1, 1))


def test_money_at_stake_at_current_rates(rates):
    rows = {r["name"]: r for r in advice_rows(AdviceQuery(window_days=2, now=f.END))}
    assert rows["ml"]["monthly_money_at_stake"] == "13140.00"      # 9 GPUs × 730 × 2.00
    assert rows["empty"]["monthly_money_at_stake"] == "11680.00"   # 8 × 730 × 2.00, the cluster's H100
    # no 1g.10gb rate on the card: the A100's 1.40 per GPU-hour × 1/7 per instance-hour
    assert rows["mig"]["monthly_money_at_stake"] == "146.00"
    assert rows["scratch"]["monthly_money_at_stake"] is None       # no quota, nothing at stake


def test_a_model_without_a_rate_is_unpriced(fleet):
    Rate.objects.create(gpu_model=f.A100, price_class="on_demand", hourly_rate=Decimal("1.40"), currency="EUR",
                        effective_from=date(2026, 1, 1))
    rows = {r["name"]: r for r in advice_rows(AdviceQuery(window_days=2, now=f.END))}
    assert rows["ml"]["monthly_money_at_stake"] is None and rows["ml"]["currency"] is None
    assert rows["mig"]["monthly_money_at_stake"] == "146.00"


def test_money_budget_priced_by_the_rate_card(rates):
    TeamBudget.objects.create(team=fleet_team(), unit="money", currency="EUR", monthly_amount=Decimal("400"))
    raised = check_budgets(f.END + timedelta(hours=12))
    # ml: 192 GPU-hours × 2.00 = 384.00 of 400.00 = 96 %
    assert [(r.alert.key, r.alert.fields["spent"]) for r in raised] == [("budget:vision:2026-11:80", "384.00")]


def fleet_team():
    from apps.teams.models import Team

    return Team.objects.get(name="vision")
