"""Which team a namespace belonged to on a given day or hour (docs/teams-and-relabels.md).

The admin's dated mapping in force wins; without one, the `label_<key>` kube-state-metrics
gave the namespace at that hour (its label history); without that, `unassigned`.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings

from . import history
from .models import UNASSIGNED, LabelClaim, NamespaceAssignment, NamespaceLabel, Team

SOURCE_MAPPING = "admin mapping"
SOURCE_LABEL = "label"

Key = tuple[int, str]   # (cluster id, namespace)


class TeamResolver:
    def __init__(self, cluster_ids=None, *, as_of: datetime | None = None,
                 labels_known_until: dict[str, datetime | None] | None = None):
        """`as_of`: the label history, label trust, approved claims and known teams as they stood at
        that instant (a closed month's close, for its late data and its views: docs/accounting.md),
        from their history; the label history so for the hours each cluster had ingested by then
        (`labels_known_until`: cluster name -> its watermark at the close), as it is now after."""
        self.as_of = as_of
        zone = ZoneInfo(settings.BILLING_TIMEZONE)
        self.cluster_ids = None if cluster_ids is None else frozenset(cluster_ids)   # None: every cluster
        assignments = NamespaceAssignment.objects.select_related("team", "namespace__cluster")
        if cluster_ids is not None:
            assignments = assignments.filter(namespace__cluster_id__in=cluster_ids)
        self.cluster_names: dict[int, str] = {}    # of the namespaces it knows
        trust: dict[int, str] = {}
        self._history: dict[Key, history.History] = self._labels(NamespaceLabel.objects.all(), trust)
        if as_of is not None:
            then = self._labels(NamespaceLabel.history.as_of(as_of), trust)
            known = labels_known_until or {}
            self._history = {key: history.spliced(then.get(key, []), self._history.get(key, []),
                                                  known.get(self.cluster_names.get(key[0])))
                             for key in then.keys() | self._history.keys()}
        self._apply_label_trust(trust)
        self._times = {k: [t for t, _ in v] for k, v in self._history.items()}
        # A day's label is the one in force at its first instant: a row counts from the first
        # billing day it covers whole (its own day when it starts at local midnight).
        self._whole_days = {k: [_first_whole_day(t, zone) for t in v] for k, v in self._times.items()}
        dated = defaultdict(list)
        for a in assignments.order_by("effective_from"):
            dated[(a.namespace.cluster_id, a.namespace.name)].append((a.effective_from, a.team.name))
            self.cluster_names[a.namespace.cluster_id] = a.namespace.cluster.name
        self._dates = {k: [d for d, _ in v] for k, v in dated.items()}
        self._teams = {k: [t for _, t in v] for k, v in dated.items()}
        self._history = dict(self._history)     # read only from here on: a lookup adds no key
        # Built on first use, from the histories above (a resolver is never changed once built,
        # so one kept for a version of the mapping — apps/accounting/usage/team_mapping.py — answers its
        # window questions from these instead of walking every namespace again).
        self._changes: dict[int, list[datetime]] | None = None
        self._midnights: list[datetime] | None = None
        self._of: dict[frozenset, set[str] | None] = {}

    def _labels(self, rows, trust: dict[int, str]) -> dict[Key, history.History]:
        """The label histories of `rows` (label rows now, or as they stood at an instant), noting
        each cluster's name and label trust."""
        if self.cluster_ids is not None:
            rows = rows.filter(namespace__cluster_id__in=self.cluster_ids)
        out: dict[Key, history.History] = defaultdict(list)
        for c, cluster, name, valid_from, label, label_trust in (rows.order_by("valid_from").values_list(
                "namespace__cluster_id", "namespace__cluster__name", "namespace__name", "valid_from", "team_label",
                "namespace__cluster__label_trust")):
            out[(c, name)].append((valid_from, label))
            self.cluster_names[c] = cluster
            trust[c] = label_trust
        return dict(out)

    def _apply_label_trust(self, trust: dict[int, str]) -> None:
        """Per cluster's label trust (docs/teams-and-relabels.md, "Who may claim a team"): every
        label counts (trusted), only labels naming an admin's team (known_teams), or only approved
        claims from their approval on (approve). No query at all when every cluster is trusted."""
        from apps.clusters.models import Cluster

        if self.as_of is not None and trust:
            # A cluster with no history by then (changed by a bulk write) keeps what it says now.
            then = dict(Cluster.history.as_of(self.as_of).filter(id__in=list(trust)).values_list("id", "label_trust"))
            trust = {c: then.get(c, t) for c, t in trust.items()}
        trust = {c: t for c, t in trust.items() if t != Cluster.LabelTrust.TRUSTED}
        if not trust:
            return
        known = set(Team.objects.values_list("name", flat=True))
        claims = LabelClaim.objects
        if self.as_of is not None:
            # Teams as they were named then, and those written without history (as they are now).
            known = (set(Team.history.as_of(self.as_of).values_list("name", flat=True))
                     | known - set(Team.history.values_list("name", flat=True)))
            claims = LabelClaim.history.as_of(self.as_of)
        approvals: dict[Key, dict[str, datetime]] = defaultdict(dict)
        for c, name, label, since in claims.filter(
                namespace__cluster_id__in=list(trust), decision=LabelClaim.Decision.APPROVED).values_list(
                "namespace__cluster_id", "namespace__name", "team_label", "effective_from"):
            approvals[(c, name)][label] = since
        for key, rows in self._history.items():
            mode = trust.get(key[0])
            if mode == Cluster.LabelTrust.KNOWN_TEAMS:
                self._history[key] = [(t, label if label in known else "") for t, label in rows]
            elif mode == Cluster.LabelTrust.APPROVE:
                self._history[key] = history.accepted(rows, approvals.get(key, {}))

    def resolve(self, cluster_id: int, namespace: str, day: date, at: datetime | None = None) -> tuple[str, str]:
        """(team, source) on billing day `day`; the label is the one in force at `at`, an
        instant of that day (default: the day's start). Source: SOURCE_MAPPING, SOURCE_LABEL, or ''."""
        key = (cluster_id, namespace)
        dates = self._dates.get(key)
        if dates:
            i = bisect_right(dates, day) - 1
            if i >= 0:
                return self._teams[key][i], SOURCE_MAPPING
        rows = self._history.get(key)
        if not rows:
            return UNASSIGNED, ""
        if at is not None:
            i = bisect_right(self._times[key], at) - 1
        else:
            i = bisect_right(self._whole_days[key], day) - 1
        label = rows[max(i, 0)][1]
        return (label, SOURCE_LABEL) if label else (UNASSIGNED, SOURCE_LABEL)

    def fixed_team(self, cluster_id: int, namespace: str, since: date) -> str | None:
        """The namespace's team on every billing day from `since` on and at every instant of them,
        when nothing can change it from then on: a mapping all of whose dates are on or before
        `since`, or no mapping and at most one label row. None: it may change (ask `team`).
        A month's read resolves most of its 230,000 cells with one dictionary lookup this way."""
        key = (cluster_id, namespace)
        dates = self._dates.get(key)
        if dates:
            return self._teams[key][-1] if dates[-1] <= since else None
        rows = self._history.get(key)
        if not rows:
            return UNASSIGNED
        if len(rows) > 1:
            return None
        return rows[0][1] or UNASSIGNED

    def fixed_teams(self, since: date) -> tuple[dict[Key, str], set[Key]]:
        """Of the namespaces it knows: those whose team cannot change from `since` on, with it
        (`fixed_team`), and the others. A namespace it does not know is `unassigned` throughout."""
        fixed, moving = {}, set()
        for key in set(self._dates) | set(self._history):
            team = self.fixed_team(key[0], key[1], since)
            if team is None:
                moving.add(key)
            else:
                fixed[key] = team
        return fixed, moving

    def team(self, cluster_id: int, namespace: str, day: date, at: datetime | None = None) -> str:
        return self.resolve(cluster_id, namespace, day, at)[0]

    def label_changes(self, start: datetime, end: datetime) -> dict[int, list[datetime]]:
        """Per cluster, the instants inside (start, end) at which some namespace's label changes."""
        if self._changes is None:
            out: dict[int, set[datetime]] = defaultdict(set)
            for (cluster_id, _), rows in self._history.items():
                out[cluster_id].update(history.changes(rows))
            self._changes = {c: sorted(ts) for c, ts in out.items() if ts}
        inside = {c: ts[bisect_right(ts, start):bisect_left(ts, end)] for c, ts in self._changes.items()}
        return {c: ts for c, ts in inside.items() if ts}

    def team_changes(self, start: datetime, end: datetime) -> list[datetime]:
        """Every instant inside (start, end) at which some namespace may change team: a label
        change, or the midnight an admin mapping takes effect (docs/teams-and-relabels.md).
        Between two of them every namespace keeps one team."""
        if self._midnights is None:
            zone = ZoneInfo(settings.BILLING_TIMEZONE)
            self._midnights = sorted({_midnight(d, zone) for dates in self._dates.values() for d in dates})
        out = {t for ts in self.label_changes(start, end).values() for t in ts}
        out.update(self._midnights[bisect_right(self._midnights, start):bisect_left(self._midnights, end)])
        return sorted(out)

    def namespaces_of(self, teams) -> set[str] | None:
        """The names of the namespaces that resolve to one of `teams` at some time: mapped to it,
        or labelled with it (as label trust counts labels). None when `unassigned` is among
        them: any namespace nobody mapped or labelled is. Readers narrow their SQL with it and
        still resolve each row (docs/teams-and-relabels.md). The caller must not change it."""
        teams = frozenset(teams)
        if UNASSIGNED in teams:
            return None
        if teams not in self._of:
            out = {key[1] for key, names in self._teams.items() if any(t in teams for t in names)}
            out |= {key[1] for key, rows in self._history.items() if any(label in teams for _, label in rows)}
            if len(self._of) > 256:
                self._of.clear()
            self._of[teams] = frozenset(out)
        return self._of[teams]

    def namespaces(self) -> set[Key]:
        """Every namespace with a label history or an admin mapping."""
        return set(self._history) | set(self._dates)

    def label_history(self, cluster_id: int, namespace: str) -> history.History:
        return list(self._history.get((cluster_id, namespace), ()))

    def mapping_dates(self, cluster_id: int, namespace: str) -> list[date]:
        return list(self._dates.get((cluster_id, namespace), ()))


def renamed_teams() -> dict[str, str]:
    """Former name → current name of every renamed team, for the names no team carries now: a
    team is the same team after a rename (docs/teams-and-relabels.md, "Renaming a team")."""
    current = dict(Team.objects.values_list("id", "name"))
    taken = set(current.values())
    out: dict[str, str] = {}
    for team_id, name in Team.history.order_by("history_id").values_list("id", "name"):
        if team_id in current and name != current[team_id] and name not in taken:
            out[name] = current[team_id]
    return out


def _first_whole_day(instant: datetime, zone: ZoneInfo) -> date:
    local = instant.astimezone(zone)
    return local.date() if local.time() == time.min else local.date() + timedelta(days=1)


def _midnight(day: date, zone: ZoneInfo) -> datetime:
    return datetime.combine(day, time.min, tzinfo=zone).astimezone(ZoneInfo("UTC"))
