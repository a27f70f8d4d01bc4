"""Alerts people can read (#26): "idle for 3 days", not "4320 minutes"; the share of the budget
actually used ("111 %", not the 100 % threshold); amounts with thousands separators.

Before: "idle for 4320 minutes"; "used 100 % of its budget (5492.52 of 4943.00 USD)".
"""
from datetime import date, datetime, timezone
from decimal import Decimal

import pytest

from apps.accounting.text import duration_text, money_text, quantity_text
from apps.recommendations import alerts
from apps.recommendations.alerts import check_budgets, used_percent
from apps.recommendations.models import TeamBudget

NOW = datetime(2026, 11, 20, 12, tzinfo=timezone.utc)


@pytest.mark.parametrize("minutes, text", [
    (4320, "3 days"), (90, "1 hour 30 minutes"), (26 * 60 + 10, "1 day 2 hours"), (24 * 60 + 5, "1 day"),
    (45, "45 minutes"), (60, "1 hour"), (0.5, "0 minutes"), (2 * 24 * 60 + 60, "2 days 1 hour"),
])
def test_durations_in_words(minutes, text):
    assert duration_text(minutes * 60) == text


def test_amounts_with_separators():
    assert money_text(Decimal("5492.52"), "USD") == "$5,492.52"
    assert money_text(Decimal("1234.5"), "JPY") == "¥1,235"       # half-up in the yen's whole unit
    assert quantity_text(Decimal("12345.678")) == "12,345.68"


def test_used_percent_is_the_share_spent_rounded_down():
    assert used_percent(Decimal("5492.52"), Decimal("4943.00")) == 111
    assert used_percent(Decimal("996"), Decimal("1000")) == 99
    assert used_percent(Decimal("1000"), Decimal("1000")) == 100


def test_a_budget_alert_says_the_share_used_and_formatted_amounts(fleet):
    # vision's 192 GPU-hours of November so far at 28.606875 USD = 5,492.52 (the statement's money),
    # of a 4,943.00 budget: 111 %
    from apps.accounting.models import Rate
    Rate.objects.create(gpu_model="NVIDIA H100 80GB HBM3", mig_profile="", price_class="on_demand",
                        hourly_rate=Decimal("28.606875"), currency="USD", effective_from=date(2026, 1, 1))
    TeamBudget.objects.create(team=fleet["vision"], unit=TeamBudget.Unit.MONEY, currency="USD",
                              monthly_amount=Decimal("4943.00"))
    raised = check_budgets(NOW)
    assert [r.alert.key for r in raised] == ["budget:vision:2026-11:80", "budget:vision:2026-11:100"]
    assert raised[1].alert.text == ("GPU budget: team vision has used 111 % of its 2026-11 budget "
                                    "($5,492.52 of $4,943.00), past 100 %.")
    assert raised[1].alert.fields["used_percent"] == 111 and raised[1].alert.fields["spent"] == "5492.52"


def test_a_long_idle_stretch_is_said_in_days(fleet):
    from datetime import timedelta

    from django.utils import timezone as dj_timezone

    from tests.support import factories as f
    c = fleet["cluster"]
    top = dj_timezone.now().replace(minute=0, second=0, microsecond=0)
    dev = f.make_device(c, uuid="GPU-nb")
    hours = [top - timedelta(hours=72 - i) for i in range(72)]
    f.make_usage_hours(dev, "ml", "nb-0", hours, 1, efficiency=0.0, idle_prefix_seconds=3600, idle_suffix_seconds=3600,
            idle_max_run_seconds=3600, idle_whole_hour=True)
    [raised] = alerts.check_idle(lookback_hours=96)
    assert "idle for 3 days since" in raised.alert.text
    assert raised.alert.fields["idle_minutes"] == 4320
