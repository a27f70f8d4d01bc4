"""The usage API merges days in which nothing dated changes; the money and hours must not move."""
from datetime import date
from decimal import Decimal

import pytest

from apps.accounting.pricing.rates import price_usage_rows_detail
from apps.accounting.usage.cells import UsageFilter, group_cells, usage_cells
from apps.teams.models import Namespace, NamespaceAssignment

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_team, make_usage, utc

pytestmark = pytest.mark.django_db


@pytest.fixture
def moving_month():
    """ml: 2 GPU-hours a day on an H100, 1–6 March; the rate goes 2.00 → 3.00 on the 3rd and
    ml moves from team A to team B on the 5th."""
    prod = make_cluster()
    make_namespace(prod, "ml", "A")
    NamespaceAssignment.objects.create(namespace=Namespace.objects.get(name="ml"), team=make_team("B"),
                                       effective_from=date(2026, 3, 5))
    make_rate(hourly_rate="2.00", effective_from=date(2026, 1, 1))
    make_rate(hourly_rate="3.00", effective_from=date(2026, 3, 3))
    device = make_device(prod)
    for day in range(1, 7):
        make_usage(device, "ml", utc(2026, 3, day, 10), hours=2)
    return UsageFilter(start=utc(2026, 3, 1), end=utc(2026, 3, 7))


def priced(cells, group_by):
    rows = group_cells(cells, group_by)
    return {r.key: (round(r.allocated_gpu_seconds / 3600, 6), p) for r, p in zip(rows, price_usage_rows_detail(rows))}


def test_spans_break_at_rate_changes_and_team_moves(moving_month):
    spans = usage_cells(moving_month, per_day=False)
    assert sorted(c.day for c in spans) == [date(2026, 3, 1), date(2026, 3, 3), date(2026, 3, 5)]
    # A: 1st–2nd at 2.00 (4 h → 8.00) + 3rd–4th at 3.00 (4 h → 12.00); B: 5th–6th at 3.00 (4 h → 12.00)
    assert priced(spans, "team") == {"A": (8.0, ("20.00", "USD", 0.0)), "B": (4.0, ("12.00", "USD", 0.0))}


@pytest.mark.parametrize("group_by", ["team", "namespace", "cluster", "gpu_model"])
def test_spans_and_days_give_the_same_rows(moving_month, group_by):
    per_day = usage_cells(moving_month)
    assert len(per_day) == 6
    assert priced(usage_cells(moving_month, per_day=False), group_by) == priced(per_day, group_by)


def test_the_api_uses_spans_with_the_same_figures(moving_month, client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", password="pw"))
    rows = client.get("/api/v1/usage/", {"start": "2026-03-01", "end": "2026-03-07", "group_by": "team"}).json()
    assert {r["key"]: (r["allocated_gpu_hours"], r["cost"]) for r in rows["results"]} == {
        "A": (8.0, "20.00"), "B": (4.0, "12.00")}


def test_the_statement_is_priced_from_spans_and_closing_freezes_days(moving_month, finance):
    """March's open statement: the same lines whether built from the six days or the three
    spans; closing freezes exactly those lines and, as the late-data baseline, the six days."""
    from apps.accounting.actions.periods import do_close_period
    from apps.accounting.core.lines import build_lines
    from django.db.models import Q

    from apps.accounting.ledger.frozen import frozen_cells
    from apps.accounting.pricing.rates import load_rate_card
    from apps.accounting.ledger.statements import compute_open, month_cells, statement

    card = load_rate_card()
    by_day, by_span = build_lines(month_cells("2026-03"), card), build_lines(month_cells("2026-03", per_day=False), card)
    assert len(month_cells("2026-03")) == 6 and len(month_cells("2026-03", per_day=False)) == 3
    assert by_day == by_span
    shown = [(line.team, line.hourly_rate, line.allocated_gpu_seconds, line.cost) for line in statement("2026-03").lines]
    # A at 2.00 for 1st–2nd (4 h), A at 3.00 for 3rd–4th (4 h), B at 3.00 for 5th–6th (4 h)
    assert shown == [("A", Decimal("2.00"), Decimal("14400.0"), Decimal("8")),
                     ("A", Decimal("3.00"), Decimal("14400.0"), Decimal("12")),
                     ("B", Decimal("3.00"), Decimal("14400.0"), Decimal("12"))]
    assert compute_open("2026-03").cells == []            # showing a month reads no per-day cells
    do_close_period("2026-03", actor=finance)
    frozen = statement("2026-03")
    assert frozen.closed and [(line.team, line.hourly_rate, line.cost) for line in frozen.lines] == [
        (t, r, c) for t, r, _, c in shown]
    assert sorted(c.day for _, _, c in frozen_cells(Q())) == [date(2026, 3, d) for d in range(1, 7)]
