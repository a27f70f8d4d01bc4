"""history.accepted, by hand: which team label counts when claims need approval."""
from datetime import datetime, timezone

from apps.teams.history import accepted


def h(hour):
    return datetime(2026, 3, 1, hour, tzinfo=timezone.utc)


def test_a_pending_claim_leaves_the_hours_with_the_previous_team():
    history = [(h(0), "a"), (h(5), "b")]
    assert accepted(history, {"a": h(0)}) == [(h(0), "a")]
    assert accepted(history, {"a": h(0), "b": h(8)}) == [(h(0), "a"), (h(8), "b")]
    assert accepted(history, {"a": h(0), "b": h(2)}) == [(h(0), "a"), (h(5), "b")]   # approved ahead of the change


def test_nothing_approved_is_unassigned_and_removing_the_label_needs_no_approval():
    assert accepted([(h(0), "a")], {}) == [(h(0), "")]
    assert accepted([(h(0), "a"), (h(3), "")], {"a": h(1)}) == [(h(0), ""), (h(1), "a"), (h(3), "")]


def test_a_claim_no_longer_made_is_never_adopted_later():
    history = [(h(0), "a"), (h(1), "b"), (h(2), "c")]
    # b is approved at 03:00, when the label already says c (pending): the namespace stays with a
    assert accepted(history, {"a": h(0), "b": h(3)}) == [(h(0), "a")]
    # c approved at 04:00 takes over then
    assert accepted(history, {"a": h(0), "b": h(3), "c": h(4)}) == [(h(0), "a"), (h(4), "c")]
