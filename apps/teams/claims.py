"""Namespace → team claims on clusters whose labels need approval (docs/teams-and-relabels.md).

A claim is a (namespace, team label) that the namespace's label history holds. On a cluster
with `label_trust = approve` it counts only once approved, from the hour the admin says; until
then the namespace's hours stay with the team it had before (or `unassigned`). Decisions go
through `do_decide_claim` (one transaction, one audit row); mapping the namespace to a team
instead is the dated admin mapping (`apps.accounting.actions.namespaces.do_assign_namespace`).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Min

from .labels import ensure_label_teams
from .models import AuditEvent, LabelClaim, Namespace, NamespaceLabel


@dataclass(frozen=True)
class Claim:
    namespace_id: int
    cluster: str
    namespace: str
    team_label: str
    since: datetime            # the first hour the label said so


def pending_claims() -> list[Claim]:
    """Claims with no decision yet, on clusters that need approval, oldest first."""
    from apps.clusters.models import Cluster

    decided = set(LabelClaim.objects.values_list("namespace_id", "team_label"))
    rows = (NamespaceLabel.objects.filter(namespace__cluster__label_trust=Cluster.LabelTrust.APPROVE)
            .exclude(team_label="").values("namespace_id", "namespace__cluster__name", "namespace__name", "team_label")
            .annotate(since=Min("valid_from")).order_by("since", "namespace__name"))
    return [Claim(r["namespace_id"], r["namespace__cluster__name"], r["namespace__name"], r["team_label"], r["since"])
            for r in rows if (r["namespace_id"], r["team_label"]) not in decided]


def first_claimed(namespace: Namespace, team_label: str) -> datetime | None:
    """The first hour `namespace`'s labels named `team_label` (None: they never did)."""
    return (NamespaceLabel.objects.filter(namespace=namespace, team_label=team_label)
            .order_by("valid_from").values_list("valid_from", flat=True).first())


def recent_decisions(limit: int = 50):
    """The newest decided claims, for the admin's claims page."""
    return LabelClaim.objects.select_related("namespace__cluster", "decided_by").order_by("-decided_at")[:limit]


class ClaimError(Exception):
    pass


def do_decide_claim(namespace: Namespace, team_label: str, decision: str, effective_from: datetime,
                    actor=None) -> LabelClaim:
    """Approve (counting from `effective_from`, floored to its hour) or ignore a claim."""
    if decision not in LabelClaim.Decision.values:
        raise ClaimError(f"decision must be one of {', '.join(LabelClaim.Decision.values)}")
    if not NamespaceLabel.objects.filter(namespace=namespace, team_label=team_label).exists():
        raise ClaimError(f"namespace {namespace} never claimed team {team_label!r}")
    effective_from = effective_from.replace(minute=0, second=0, microsecond=0)
    with transaction.atomic():
        claim, _ = LabelClaim.objects.update_or_create(
            namespace=namespace, team_label=team_label,
            defaults={"decision": decision, "effective_from": effective_from, "decided_by": actor})
        AuditEvent.objects.create(actor=actor, action=f"claim.{decision}", target=f"{namespace} → {team_label}",
                                  new_value={"effective_from": effective_from.isoformat()})
        if decision == LabelClaim.Decision.APPROVED:     # the approved team gets its page and picker entry
            ensure_label_teams([team_label], namespace.cluster, approved=True)
    return claim
