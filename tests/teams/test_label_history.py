"""Label history merges (apps/teams/history.py), worked out by hand: every change kept at its
hour, re-ingests change nothing, and a backfill of an earlier month never rewrites a later one."""
from datetime import datetime, timedelta, timezone

from apps.teams.history import changes, label_at, merged

H = timedelta(hours=1)


def day(month, d, hour=0):
    return datetime(2026, month, d, hour, tzinfo=timezone.utc)


def hours(start, end, label):
    """One observation per hour of [start, end)."""
    out, t = [], start
    while t < end:
        out.append((t, label))
        t += H
    return out


def test_changes_are_kept_at_their_hour_and_reingest_is_a_no_op():
    seen = hours(day(3, 1), day(3, 15), "alpha") + hours(day(3, 15), day(4, 1), "beta")
    once = merged([], seen)
    assert once == [(day(3, 1), "alpha"), (day(3, 15), "beta")]
    assert merged(once, seen, known_until=day(3, 31, 23)) == once
    assert merged(once, seen[300:400], known_until=day(3, 31, 23)) == once    # an overlapping window


def test_a_backfill_of_an_earlier_month_keeps_the_later_history():
    march = [(day(3, 1), "alpha"), (day(3, 15), "beta")]
    feb = hours(day(2, 1), day(3, 1), "gamma")
    assert merged(march, feb, known_until=day(3, 31, 23)) == [(day(2, 1), "gamma")] + march


def test_a_backfill_restores_a_later_month_that_repeated_the_label_before_it():
    """January then March were ingested, both alpha (March wrote no row); February, gamma, comes last."""
    stored = [(day(1, 1), "alpha")]
    feb = hours(day(2, 1), day(3, 1), "gamma")
    assert merged(stored, feb, known_until=day(3, 31, 23)) == [
        (day(1, 1), "alpha"), (day(2, 1), "gamma"), (day(3, 1), "alpha")]
    # nothing after February known: its label holds on
    assert merged(stored, feb, known_until=day(1, 31, 23)) == [(day(1, 1), "alpha"), (day(2, 1), "gamma")]


def test_the_hours_an_ingest_saw_say_what_it_saw():
    h = [day(3, 1, i) for i in range(10)]
    stored = [(h[0], "a"), (h[5], "b")]
    assert merged(stored, [(t, "a") for t in h[3:7]], known_until=h[9]) == [(h[0], "a"), (h[7], "b")]
    # a row after the window repeating the label now in force is dropped
    assert merged(stored, [(t, "b") for t in h[2:5]]) == [(h[0], "a"), (h[2], "b")]


def test_label_at_and_changes():
    rows = [(day(3, 1), "alpha"), (day(3, 10), "alpha"), (day(3, 15), "")]
    assert label_at([], day(3, 1)) is None
    assert label_at(rows, day(2, 1)) == "alpha"          # before the first row: the first label
    assert label_at(rows, day(3, 14, 23)) == "alpha"
    assert label_at(rows, day(3, 15)) == ""               # the label removed: no team
    assert changes(rows) == [day(3, 15)]                  # a repeated label is no change
