"""A team-scoped read (a lead, a team page) asks SQL only for the namespaces that can ever
resolve to its teams, and still resolves every row: the cells are exactly those of the
fleet-wide read kept for those teams (docs/teams-and-relabels.md).

Cluster `prod`, March 2026, each namespace one H100 for hours 10:00–12:00 on March 3 and 20:
- `ns-map`: labelled nlp, but an admin mapped it to vision from 2020 → vision on both days;
- `ns-relabel`: labelled nlp, then vision from March 15 → nlp on the 3rd, vision on the 20th;
- `ns-nlp`: labelled nlp → nlp;
- `ns-none`: no label, no mapping → unassigned.
"""
import pytest

from apps.accounting.usage.cells import UsageFilter, usage_cells
from apps.teams.models import UNASSIGNED
from apps.teams.resolve import TeamResolver

from tests.support.factories import label_namespace, make_cluster, make_device, make_namespace, make_usage, utc

pytestmark = pytest.mark.django_db
MARCH = dict(start=utc(2026, 3, 1), end=utc(2026, 4, 1))


@pytest.fixture
def fleet():
    cluster = make_cluster()
    make_namespace(cluster, "ns-map", "vision", label_team="nlp")
    relabel = make_namespace(cluster, "ns-relabel", label_team="nlp")
    label_namespace(relabel, "vision", since=utc(2026, 3, 15))
    make_namespace(cluster, "ns-nlp", label_team="nlp")
    make_namespace(cluster, "ns-none")
    for i, ns in enumerate(("ns-map", "ns-relabel", "ns-nlp", "ns-none")):
        device = make_device(cluster, host=f"node-{i}")
        for day in (3, 20):
            make_usage(device, ns, utc(2026, 3, day, 10), hours=2)
    return cluster


def test_the_namespaces_a_team_can_resolve_to(fleet):
    resolver = TeamResolver()
    assert resolver.namespaces_of({"vision"}) == {"ns-map", "ns-relabel"}
    assert resolver.namespaces_of({"nlp"}) == {"ns-map", "ns-relabel", "ns-nlp"}   # labels a mapping overrides too
    assert resolver.namespaces_of({"nobody"}) == set()
    assert resolver.namespaces_of({UNASSIGNED, "vision"}) is None                 # any namespace may be unassigned


@pytest.mark.parametrize("per_day", [True, False])
@pytest.mark.parametrize("teams", [{"vision"}, {"nlp"}, {"vision", "nlp"}, {UNASSIGNED}, {"nobody"}])
def test_scoped_cells_are_the_fleet_cells_of_those_teams(fleet, teams, per_day):
    everything = usage_cells(UsageFilter(**MARCH), per_day=per_day)
    expected = sorted((c.namespace, c.team, c.day, c.gpu_seconds) for c in everything
                      if c.namespace and c.team in teams)
    scoped = usage_cells(UsageFilter(**MARCH, teams=frozenset(teams)), per_day=per_day)
    assert sorted((c.namespace, c.team, c.day, c.gpu_seconds) for c in scoped) == expected


def test_vision_by_hand(fleet):
    cells = usage_cells(UsageFilter(**MARCH, teams=frozenset({"vision"})))
    hours = {}
    for c in cells:
        hours[(c.namespace, c.day.day)] = hours.get((c.namespace, c.day.day), 0) + c.gpu_seconds / 3600
    assert hours == {("ns-map", 3): 2.0, ("ns-map", 20): 2.0, ("ns-relabel", 20): 2.0}
