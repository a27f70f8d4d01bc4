"""A namespace's team-label history as plain data: reading it, and merging what an ingest saw.

A history is a time-ordered list of (valid_from, label): from each whole UTC hour on, the
label says this ('' = no team label) until the next row. Before its first row a namespace
carries its first label (nothing earlier was ever seen). docs/teams-and-relabels.md tells
the rules in prose; no Django here.
"""
from __future__ import annotations

from bisect import bisect_right
from datetime import datetime, timedelta

HOUR = timedelta(hours=1)

History = list[tuple[datetime, str]]


def label_at(history: History, at: datetime) -> str | None:
    """The label in force at `at`; None for an empty history."""
    if not history:
        return None
    i = bisect_right([t for t, _ in history], at) - 1
    return history[max(i, 0)][1]


def changes(history: History) -> list[datetime]:
    """The instants at which the label takes a different value (a repeated value is none)."""
    return [t for (t, label), (_, before) in zip(history[1:], history) if label != before]


def merged(stored: History, observed: History, known_until: datetime | None = None) -> History:
    """The history after an ingest that saw `observed` (label per hour seen, time-ordered).

    The hours the ingest saw, from its first to its last, say what it saw: a change is kept
    at the first hour carrying the new label. The hours after it keep what they said before
    when anything later is known (a later row, or `known_until`: the last label sample seen
    before this ingest), so a backfill of an earlier month never rewrites a later one; when
    nothing later is known, the last label seen holds on. Merging the same observations
    twice gives the same history.
    """
    if not observed:
        return list(stored)
    first, last = observed[0][0], observed[-1][0]
    after = last + HOUR
    later_known = any(t > last for t, _ in stored) or (known_until is not None and known_until >= after)
    resume = label_at(stored, after) if later_known else None
    out = [(t, label) for t, label in stored if t < first]
    current = out[-1][1] if out else None
    for t, label in observed:
        if label != current:
            out.append((t, label))
            current = label
    rest = [(t, label) for t, label in stored if t > last]
    if resume is not None and resume != current and not (rest and rest[0][0] == after):
        out.append((after, resume))
        current = resume
    for t, label in rest:
        if label != current:              # a row repeating the label in force says nothing
            out.append((t, label))
            current = label
    return out


def accepted(history: History, approvals: dict[str, datetime]) -> History:
    """The team labels that count, on a cluster whose claims need an admin's approval.

    `approvals`: label -> the instant its approval counts from. Walking the label changes and
    the approvals in time order, the team in force becomes the label in force whenever that
    label is approved by then; otherwise it stays what it was (the previous team, or '' at the
    start): a new claim counts from the hour it is approved, never before, and a claim that is
    no longer made is never adopted later. Removing the label ('') needs no approval.
    """
    if not history:
        return []
    times = [t for t, _ in history]
    events = sorted(set(times) | {t for t in approvals.values() if t > times[0]})
    out: History = []
    team = ""
    for at in events:
        label = label_at(history, at)
        since = approvals.get(label)
        if label == "" or (since is not None and since <= at):
            team = label
        if not out or out[-1][1] != team:
            out.append((at, team))
    return out


def spliced(then: History, now: History, known_until: datetime | None) -> History:
    """A namespace's history as a past instant knew it (`then`: the rows recorded by then) for the
    hours before `known_until` (what had been ingested by then), and as it is known now (`now`)
    from that hour on: labels that came later with hours ingested later count, a rewrite of the
    hours already known does not (docs/accounting.md, "Late data for a closed month"). A namespace
    nothing was recorded of by then reads `now`; with `known_until` None (not known), `then` holds
    for every hour. A repeated label is no row."""
    if not then:
        return list(now)
    head = [(t, label) for t, label in then if known_until is not None and t < known_until]
    if not head or not now:
        return list(then)
    out = list(head)
    for t, label in [(known_until, label_at(now, known_until)), *((t, label) for t, label in now if t > known_until)]:
        if label != out[-1][1]:
            out.append((t, label))
    return out

