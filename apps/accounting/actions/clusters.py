"""Node pools (a node's price class) and a cluster's settings that move money (label trust, team
label key, archived, …): saved and deleted only here, audited old -> new (docs/conventions.md,
"Writes that matter")."""
from __future__ import annotations

from apps.teams.audit import audited_delete, audited_save


POOL_FIELDS = ("cluster_id", "name", "host_pattern", "price_class", "priority")
# A cluster's settings that decide whose hours are whose, and which hours are read.
CLUSTER_FIELDS = ("name", "prometheus_url", "series_selector", "label_trust", "team_label_key", "verify_workloads",
                  "archived")


def do_save_node_pool(actor, pool):
    """Create or change a node pool (a node's price class), audited (`node_pool.create|change`)."""
    return audited_save(actor, pool, "node_pool", POOL_FIELDS)


def do_delete_node_pool(actor, pool) -> None:
    audited_delete(actor, pool, "node_pool", POOL_FIELDS)


def do_save_cluster(actor, cluster):
    """Save a cluster as its admin form cleaned it, auditing the settings that move money
    (`cluster.create|change`: label trust, team label key, archived, …)."""
    return audited_save(actor, cluster, "cluster", CLUSTER_FIELDS, clean=False)
