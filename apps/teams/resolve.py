"""Which team a namespace belonged to on a given day (SPEC §2 Team).

The admin's dated mapping wins; without one, the namespace's `label_<key>` from
kube-state-metrics; without that, `unassigned`.
"""
from bisect import bisect_right
from collections import defaultdict
from datetime import date

from .models import UNASSIGNED, Namespace, NamespaceAssignment


class TeamResolver:
    def __init__(self, cluster_ids=None):
        namespaces = Namespace.objects.all()
        assignments = NamespaceAssignment.objects.select_related("team", "namespace")
        if cluster_ids is not None:
            namespaces = namespaces.filter(cluster_id__in=cluster_ids)
            assignments = assignments.filter(namespace__cluster_id__in=cluster_ids)
        self._labels = {(c, name): label for c, name, label in namespaces.values_list("cluster_id", "name", "label_team")}
        dated = defaultdict(list)
        for a in assignments.order_by("effective_from"):
            dated[(a.namespace.cluster_id, a.namespace.name)].append((a.effective_from, a.team.name))
        self._dates = {k: [d for d, _ in v] for k, v in dated.items()}
        self._teams = {k: [t for _, t in v] for k, v in dated.items()}

    def team(self, cluster_id: int, namespace: str, day: date) -> str:
        key = (cluster_id, namespace)
        dates = self._dates.get(key)
        if dates:
            i = bisect_right(dates, day) - 1
            if i >= 0:
                return self._teams[key][i]
        return self._labels.get(key) or UNASSIGNED
