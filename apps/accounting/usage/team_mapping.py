"""The team mapping as read now: one `TeamResolver` per process and version of its inputs
(docs/performance.md, "The team mapping, read once per version").

A `TeamResolver` reads every label row, admin mapping and claim of the fleet (5,000 namespaces:
~60 ms). What it reads is all logged under the `mapping` category of `accounting_inputchange`
(labels, mappings, claims, team names, cluster names and label trust: `stored.inputs.UNDATED`),
so a resolver built after reading that category's version stays exact until the version moves.
`team_resolver` keeps the last one built per set of clusters and zone, with the version read
*before* it was built: a write committed meanwhile moves the version and the next call builds
again, so a resolver older than the version a caller reads is never handed out. The version is
(count, last id, last instant) of the category's rows: the log only grows between compactions,
a compaction adds an `epoch` row, and the instant tells apart two databases (a test's flush)
whose logs have the same length.

Every product module takes its resolver here (`tests/repo/test_import_layers.py` fails on any
other `TeamResolver(...)`). The pickers' team and cluster names are kept the same way (both are
logged as `mapping`). SQLite (the demo) has no log: everything is read on every call.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from django.conf import settings
from django.db import connection

from apps.teams.resolve import TeamResolver

from apps.accounting.stored.versions import read_inputs_once, read_once, stored_answers
from apps.accounting.models import InputChange

KEPT = 12       # resolvers of sets of clusters (every cluster, each one alone, …) and the name lists
_kept: OrderedDict = OrderedDict()      # (what, zone) → (version, what was built)
_lock = threading.Lock()


# Inside `config_as_of`: the instant whose configuration (label history, label trust, approved
# claims, known teams, node pools) the reads of a closed month use, and each cluster's ingest
# watermark then (docs/accounting.md, "Late data for a closed month").
_as_of: ContextVar[tuple | None] = ContextVar("config_as_of", default=None)


@contextmanager
def config_as_of(instant: datetime | None, labels_known_until: dict[str, datetime | None] | None = None):
    """Read the team mapping and the node pools as they stood at `instant` (a month's close), from
    their history, within the block; None: as they stand now. `labels_known_until` (cluster name ->
    its ingest watermark at `instant`): the label history as it stood then holds for the hours
    ingested by then, and the labels ingested since for the later hours (`TeamResolver`)."""
    known = tuple(sorted((labels_known_until or {}).items())) if instant is not None else ()
    token = _as_of.set((instant, known) if instant is not None else None)
    try:
        yield
    finally:
        _as_of.reset(token)


def config_instant() -> datetime | None:
    """The instant set by `config_as_of`, or None (now)."""
    held = _as_of.get()
    return held[0] if held is not None else None


def team_resolver(cluster_ids=None) -> TeamResolver:
    """The team mapping of `cluster_ids` (None: every cluster) as it stands now, or as it stood at
    the instant of `config_as_of`."""
    ids = None if cluster_ids is None else frozenset(cluster_ids)
    held = _as_of.get()
    as_of, known = held if held is not None else (None, ())
    return _current(("resolver", ids, as_of, known),
                    lambda: TeamResolver(cluster_ids, as_of=as_of, labels_known_until=dict(known)))


def team_names() -> list[str]:
    """Every team's name, sorted (the pickers'), as it stands now."""
    from apps.teams.models import Team

    return list(_current(("teams",), lambda: sorted(Team.objects.values_list("name", flat=True))))


def cluster_names() -> list[str]:
    """Every cluster's name, in the clusters' order (the pickers'), as it stands now."""
    from apps.clusters.models import Cluster

    return list(_current(("clusters",), lambda: list(Cluster.objects.filter(archived=False).values_list("name", flat=True))))


def _current(what: tuple, build):
    """`build()` as of the mapping's version now: the one kept for that version, else built."""
    if not stored_answers():
        return build()
    key = (*what, settings.BILLING_TIMEZONE)
    version = mapping_version()
    with _lock:
        kept = _kept.get(key)
        if kept is not None and kept[0] == version:
            _kept.move_to_end(key)
            return kept[1]
    built = build()
    with _lock:
        _kept[key] = (version, built)
        _kept.move_to_end(key)
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
    return built


def mapping_version() -> tuple:
    """(count, last id, last instant) of the logged mapping changes and compactions (read once
    within `stored.versions.versions_read_once`)."""
    def read():
        inputs = read_inputs_once()     # a page's versions, read in one query, answer it too
        if inputs is not None:
            return inputs.mapping()
        with connection.cursor() as cur:
            cur.execute(f"SELECT count(*), max(id), max(at) FROM {InputChange._meta.db_table} "
                        "WHERE day IS NULL AND category IN (%s, %s)", [InputChange.MAPPING, InputChange.EPOCH])
            return tuple(cur.fetchone())
    return read_once("mapping", read)


def forget() -> None:
    """Drop every kept resolver (tests that rebuild the database under one process)."""
    with _lock:
        _kept.clear()
