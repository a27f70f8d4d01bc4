"""A node's price class, from the node pools of its cluster (models/rates.py `NodePool`): the
first pool, in (priority, name) order, whose glob matches the node's name; none is on-demand.
Worked out in SQL, so that the rollups are read grouped by class, not by node
(docs/accounting.md; usage.py and rollup_reader.py read through it).
"""
from __future__ import annotations

import re

from django.db.models import Case, CharField, Q, Value, When

from apps.accounting.stored.versions import read_once
from apps.accounting.models import ON_DEMAND, NodePool
from apps.accounting.usage.team_mapping import config_instant


def glob_regex(pattern: str) -> str:
    """A NodePool glob (fnmatchcase) as an anchored regex both Postgres and Python read alike."""
    out, i = ["^"], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[" and pattern.find("]", i + 2) != -1:
            close = pattern.find("]", i + 2)
            body = pattern[i + 1:close]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = close
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out) + "$"


def price_class_expr(cluster_ids: set[int]):
    """node → price class in SQL: the first pool of the node's cluster, in (priority, name)
    order, whose glob matches the node name; no match is on-demand (models/rates.py NodePool).

    Grouping by the class instead of the node lets the database merge nodes away: a month of a
    big fleet comes back as one row per cell, not one per node.
    """
    ids = frozenset(cluster_ids)
    as_of = config_instant()      # a closed month's late data: the pools of its close (docs/accounting.md)
    pools = read_once(("node pools", ids, as_of), lambda: list(
        (NodePool.objects if as_of is None else NodePool.history.as_of(as_of))
        .filter(cluster_id__in=ids).order_by("cluster_id", "priority", "name")
        .values_list("cluster_id", "host_pattern", "price_class")))   # once a page (read_once)
    whens = [When(Q(cluster_id=cluster_id) & Q(node__regex=glob_regex(pattern)), then=Value(price_class))
             for cluster_id, pattern, price_class in pools]
    if not whens:
        return Value(ON_DEMAND, output_field=CharField())
    return Case(*whens, default=Value(ON_DEMAND), output_field=CharField())
