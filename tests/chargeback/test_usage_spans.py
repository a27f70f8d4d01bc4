"""The usage API merges days in which nothing dated changes; the money and hours must not move."""
from datetime import date

import pytest

from apps.accounting.pricing import price_usage_rows_detail
from apps.accounting.usage import UsageFilter, group_cells, usage_cells
from apps.teams.models import Namespace, NamespaceAssignment

from .factories import make_cluster, make_device, make_namespace, make_rate, make_team, make_usage, utc

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
