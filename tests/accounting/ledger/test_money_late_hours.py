"""A closed month's late hours per team are stored at the version of its late data
(`ledger.money.late_by_team`): a team's page reads one small body instead of the frozen cells, the
figures are the live sums to the float, and any change to the late data or to a close is seen
at once (docs/performance.md, "A closed month's late hours, stored").

One cluster, two teams at 1 GPU: research (namespace llm) and vision (namespace cv).
  August: closed with 2 h of llm. Then late: llm 1 h on 20 August, cv 3 h on 21 August.
  Pending in September (open): research 1 h, vision 3 h, every team 4 h.
  September closed: those 4 h are booked in September. Then 2 more late hours of cv
  (22 August) wait in October: vision 2 h pending, research none.
"""
import pytest

from apps.accounting.actions.periods import do_close_period
from apps.accounting.ledger.money import _late_live, late_by_team, late_hours
from apps.accounting.models import MonthBody
from apps.accounting.ledger.answer import closed_periods, month_late_cells

from tests.support.factories import make_cluster, make_device, make_namespace, make_rate, make_usage, utc

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def figures(period, teams=None):
    return [(x.billed_in, x.gpu_hours, x.pending) for x in late_hours(period, teams)]


def live(period, teams=None):
    return [(x.billed_in, x.gpu_hours, x.pending) for x in _late_live(period, closed_periods(), teams, None)]


def test_late_hours_are_stored_per_team_and_follow_every_change(finance):
    prod = make_cluster()
    make_namespace(prod, "llm", "research")
    make_namespace(prod, "cv", "vision")
    make_rate(hourly_rate="2.00")
    make_usage(make_device(prod), "llm", utc(2026, 8, 10, 8), hours=2)
    do_close_period("2026-08", actor=finance)
    make_usage(make_device(prod, host="node-2"), "llm", utc(2026, 8, 20, 8))
    make_usage(make_device(prod, host="node-3"), "cv", utc(2026, 8, 21, 8), hours=3)

    assert figures("2026-08") == [("2026-09", 4.0, True)]
    assert figures("2026-08", {"research"}) == [("2026-09", 1.0, True)]
    assert figures("2026-08", {"vision"}) == [("2026-09", 3.0, True)]
    assert figures("2026-08", {"nobody"}) == []
    assert MonthBody.objects.filter(period="2026-08", key="ledger-late?scope=all").count() == 1
    stored = late_by_team("2026-08", closed_periods())
    # each sum is [GPU-seconds, of them unallocated capacity]
    assert stored["teams"] == {"research": [{}, [3600.0, 0.0]], "vision": [{}, [10800.0, 0.0]]}
    assert stored["every"] == [{}, [14400.0, 0.0]]

    do_close_period("2026-09", actor=finance)           # books the 4 late hours in September
    assert figures("2026-08") == [("2026-09", 4.0, False)]
    make_usage(make_device(prod, host="node-3"), "cv", utc(2026, 8, 22, 8), hours=2)   # waits in October
    assert figures("2026-08") == [("2026-09", 4.0, False), ("2026-10", 2.0, True)]
    assert figures("2026-08", {"research"}) == [("2026-09", 1.0, False)]
    assert figures("2026-08", {"vision"}) == [("2026-09", 3.0, False), ("2026-10", 2.0, True)]
    for teams in (None, {"research"}, {"vision"}, {"research", "vision"}, {"nobody"}):
        assert figures("2026-08", teams) == live("2026-08", teams), teams
    assert figures("2026-09") == [] and figures("2026-10") == []    # September has no late data; October is open


def test_the_stored_sums_are_the_live_floats(finance):
    """Fractions of a GPU (MIG-like 1/7 shares) add up to floats whose last bits depend on the
    order of the additions: the stored per-team sums add the cells in the live order."""
    prod = make_cluster()
    make_namespace(prod, "llm", "research")
    make_rate(hourly_rate="2.00")
    make_usage(make_device(prod), "llm", utc(2026, 8, 1, 0))
    do_close_period("2026-08", actor=finance)
    for i, host in enumerate(("a", "b", "c", "d", "e")):
        make_usage(make_device(prod, host=f"node-{host}"), "llm", utc(2026, 8, 2 + i, 0),
                   instance_seconds_per_hour=3600.0 / 7 * (i + 1))
    closed = closed_periods()
    stored = late_by_team("2026-08", closed)
    in_order = 0.0
    for cell in month_late_cells("2026-08", closed["2026-08"]):
        if cell.namespace and cell.team == "research":
            in_order += cell.gpu_seconds
    assert stored["teams"]["research"][1][0] == in_order                # to the last bit
    assert stored["every"][1][0] == in_order
    assert in_order == pytest.approx(3600.0 / 7 * 15)                   # 1/7 + 2/7 + … + 5/7 of an hour
    # 15/7 h, shown to 6 places
    assert figures("2026-08", {"research"}) == live("2026-08", {"research"}) == [("2026-09", 2.142857, True)]
    assert figures("2026-08") == live("2026-08")
