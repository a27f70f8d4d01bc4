"""Late data for a closed month: compared per day key with the frozen (team, price class) it was
booked under, with one deterministic rule for days split between teams or classes
(docs/accounting.md, "Late data for a closed month"). Pure: cells in, cells out."""
import random
from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st

from apps.accounting.core.lines import Cell
from apps.accounting.ledger.late_data import delta_cells

H100 = "NVIDIA H100 80GB HBM3"
DAY = date(2026, 3, 15)
H = 3600.0


def cell(team, hours, price_class="on_demand", ns="ml", day=DAY, used=None):
    used = hours / 2 if used is None else used
    return Cell(1, "prod", ns, team, H100, "", day, hours * H, used * H, 0.0, 0.0, price_class)


def booked(cells):
    return sorted((c.team, c.price_class, round(c.gpu_seconds / H, 6)) for c in cells)


def test_a_pool_edit_after_the_close_books_nothing():
    """The whole day ran on nodes that a new pool now calls spot: the same hours, no correction
    (today's code booked −24 h on_demand and +24 h spot, or a pure credit when spot has no rate)."""
    frozen = [cell("research", 24)]
    live = [cell("research", 24, price_class="spot")]
    assert delta_cells(live, frozen) == []


def test_late_hours_after_a_pool_edit_keep_the_frozen_class():
    frozen = [cell("research", 20)]
    live = [cell("research", 22, price_class="spot")]
    assert booked(delta_cells(live, frozen)) == [("research", "on_demand", 2.0)]


def test_a_moved_split_hour_books_nothing():
    """A re-ingested label history moves the split of 15 March from 10:00 to 14:00: alpha had 10 h
    and beta 14 h at the close, now alpha 14 h and beta 10 h. Today: −4 h beta, +4 h alpha."""
    frozen = [cell("alpha", 10), cell("beta", 14)]
    live = [cell("alpha", 14), cell("beta", 10)]
    assert delta_cells(live, frozen) == []


def test_a_trust_switch_books_nothing():
    frozen = [cell("unassigned", 24)]
    live = [cell("research", 24)]
    assert delta_cells(live, frozen) == []


def test_hours_that_only_arrived_are_booked_to_their_own_team():
    """Every (team, class) grew or stayed: each is measured against its own frozen hours."""
    frozen = [cell("alpha", 10), cell("beta", 14)]
    live = [cell("alpha", 11), cell("beta", 14)]
    assert booked(delta_cells(live, frozen)) == [("alpha", "on_demand", 1.0)]
    live = [cell("alpha", 11), cell("beta", 15), cell("gamma", 2)]
    assert booked(delta_cells(live, frozen)) == [("alpha", "on_demand", 1.0), ("beta", "on_demand", 1.0),
                                                 ("gamma", "on_demand", 2.0)]


def test_hours_that_only_disappeared_are_taken_from_their_own_team():
    frozen = [cell("alpha", 10), cell("beta", 14)]
    live = [cell("alpha", 10), cell("beta", 12)]
    assert booked(delta_cells(live, frozen)) == [("beta", "on_demand", -2.0)]


def test_moved_and_late_hours_net_to_the_largest_frozen_share():
    """Hours moved between teams (alpha grew, beta shrank) and one more hour arrived: only the
    day's net +1 h is late, booked to the frozen team with the most hours (beta, 14 h)."""
    frozen = [cell("alpha", 10), cell("beta", 14)]
    live = [cell("alpha", 15), cell("beta", 10)]
    assert booked(delta_cells(live, frozen)) == [("beta", "on_demand", 1.0)]
    # the day re-read under one other team with 1 h more: the same rule
    assert booked(delta_cells([cell("omega", 25)], frozen)) == [("beta", "on_demand", 1.0)]


def test_ties_go_to_the_first_team_then_class_by_name():
    frozen = [cell("beta", 12), cell("alpha", 12, price_class="spot"), cell("alpha", 12)]
    live = [cell("omega", 37)]
    assert booked(delta_cells(live, frozen)) == [("alpha", "on_demand", 1.0)]


def test_a_day_absent_from_the_close_is_booked_as_read_now():
    frozen = [cell("alpha", 10)]
    live = [cell("alpha", 10), cell("beta", 3, ns="new", day=date(2026, 3, 16))]
    assert booked(delta_cells(live, frozen)) == [("beta", "on_demand", 3.0)]


def test_a_day_gone_entirely_is_credited_to_its_frozen_lines():
    frozen = [cell("alpha", 10), cell("beta", 2, price_class="spot")]
    assert booked(delta_cells([], frozen)) == [("alpha", "on_demand", -10.0), ("beta", "spot", -2.0)]


teams = st.sampled_from(["alpha", "beta", "gamma", "unassigned"])
classes = st.sampled_from(["on_demand", "spot"])
cells_of_a_day = st.lists(st.tuples(teams, classes, st.integers(min_value=0, max_value=24)), min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(cells_of_a_day, cells_of_a_day, st.randoms(use_true_random=False))
def test_the_rule_is_order_free_and_keeps_the_day_net(frozen_spec, live_spec, rnd: random.Random):
    """Whatever the order rows are read in, the same corrections; and they add up to the day's
    net difference (no hour billed twice or never)."""
    frozen = [cell(t, h, price_class=c) for t, c, h in frozen_spec]
    live = [cell(t, h, price_class=c) for t, c, h in live_spec]
    first = booked(delta_cells(live, frozen))
    rnd.shuffle(frozen)
    rnd.shuffle(live)
    assert booked(delta_cells(live, frozen)) == first
    net = sum(h for _, _, h in live_spec) - sum(h for _, _, h in frozen_spec)
    assert abs(sum(h for _, _, h in first) - net) < 1e-6
    if net == 0:
        # the day holds as many hours as at the close: whatever moved between teams or classes, nothing is late
        assert first == []
