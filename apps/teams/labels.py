"""The one write of team-label history: what an ingest run saw of kube_namespace_labels.

Runs of different days of one cluster ingest side by side, in any order; each merges its
hours into the history (apps/teams/history.py) under a per-cluster lock held to the end of
its transaction, so a run always merges into what the runs before it committed. Every row it
writes or removes is dated in the label rows' own history (`NamespaceLabel.history`), which a
closed month reads as of its close.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Q
from simple_history.utils import bulk_create_with_history

from apps.clusters.models import Cluster

from . import history
from .models import UNASSIGNED, AuditEvent, Namespace, NamespaceLabel, Team

TEAM_FROM_LABEL = "team.created_from_label"

# pg_advisory_xact_lock(class, cluster id): the class keeps these locks apart from any other.
LABEL_LOCK_CLASS = 0x7EA1


@dataclass
class LabelsSeen:
    """One namespace's team label per UTC hour of a run, and its last label sample."""
    hours: history.History       # (hour start, label), time-ordered
    last_seen: datetime


def record_labels_seen(cluster: Cluster, seen: dict[str, LabelsSeen]) -> int:
    """Merge a run's label observations into its namespaces' histories; returns rows written.

    Call inside the run's transaction, once, near its end (the lock lasts until commit).
    Also keeps `Namespace.label_team` (the latest label) and `label_seen_at` current.
    """
    if not seen:
        return 0
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LABEL_LOCK_CLASS, cluster.pk])
    namespaces = {n.name: n for n in Namespace.objects.filter(cluster=cluster, name__in=list(seen))}
    stored: dict[int, history.History] = defaultdict(list)
    for ns_id, valid_from, label in (NamespaceLabel.objects.filter(namespace__in=list(namespaces.values()))
                                     .order_by("valid_from").values_list("namespace_id", "valid_from", "team_label")):
        stored[ns_id].append((valid_from, label))
    gone = Q()
    new_rows, changed = [], []
    for name, s in sorted(seen.items()):
        ns = namespaces.get(name)
        if ns is None or not s.hours:
            continue
        old = stored[ns.pk]
        rows = history.merged(old, s.hours, ns.label_seen_at)
        dropped = [t for t, label in set(old) - set(rows)]
        if dropped:
            gone |= Q(namespace=ns, valid_from__in=dropped)
        new_rows += [NamespaceLabel(namespace=ns, valid_from=t, team_label=label)
                     for t, label in sorted(set(rows) - set(old))]
        latest = rows[-1][1]
        last_seen = max(s.last_seen, ns.label_seen_at) if ns.label_seen_at else s.last_seen
        if (latest, last_seen) != (ns.label_team, ns.label_seen_at):
            ns.label_team, ns.label_seen_at = latest, last_seen
            changed.append(ns)
    # Dated, both ways: a closed month reads the label history as it stood at its close
    # (`NamespaceLabel.history`; docs/accounting.md, "Late data for a closed month"). A delete
    # dates each removed row (its post_delete signal); the new rows are dated in bulk.
    if gone:
        NamespaceLabel.objects.filter(gone).delete()
    bulk_create_with_history(new_rows, NamespaceLabel, batch_size=2000)
    if changed:
        Namespace.objects.bulk_update(changed, ["label_team", "label_seen_at"], batch_size=2000)
    return len(new_rows)


def label_team_names(seen: dict[str, LabelsSeen]) -> set[str]:
    """Every team a run's label observations name (the empty label names none)."""
    return {label for s in seen.values() for _, label in s.hours if label}


def ensure_label_teams(names, cluster: Cluster, *, approved: bool = False) -> list[str]:
    """Every label value that carries cost is a real team: listed, pickable, with its page, and
    a row an admin can give a lead (docs/teams-and-relabels.md). Creates the missing Team rows;
    returns their names. `unassigned` is the portal's own name for no team, never a row.

    The one place a label value becomes a team, under the cluster's label trust: on a
    `trusted` cluster every value does as ingest sees it; on an `approve` cluster a value does
    when an admin approves its claim (`approved=True`); on `known_teams` none does, as only an
    admin's teams count there.
    """
    trust = Cluster.LabelTrust
    if not (cluster.label_trust == trust.TRUSTED or (approved and cluster.label_trust == trust.APPROVE)):
        return []
    max_length = Team._meta.get_field("name").max_length
    wanted = {n for n in names if n and n != UNASSIGNED and len(n) <= max_length}
    if not wanted:
        return []
    with transaction.atomic():
        missing = sorted(wanted - set(Team.objects.filter(name__in=wanted).values_list("name", flat=True)))
        created = []
        for name in missing:     # rare (a value's first sighting), and each keeps its change history
            _, new = Team.objects.get_or_create(name=name)
            if new:
                created.append(name)
        AuditEvent.objects.bulk_create([
            AuditEvent(action=TEAM_FROM_LABEL, target=n, new_value={"team": n, "cluster": cluster.name})
            for n in created])
    return created
