"""The team mapping is read once per version of its logged inputs (apps/accounting/usage/team_mapping.py;
docs/performance.md, "The team mapping, read once per version"): a second call reads no label or
mapping table, and every kind of mapping write — a label, an admin mapping, a claim's decision,
a team renamed, a cluster's label trust — is seen by the next call."""
from datetime import date, datetime, timezone

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounting.usage import team_mapping as resolvers
from apps.accounting.usage.team_mapping import team_resolver
from apps.clusters.models import Cluster
from apps.teams.models import Team

from tests.support.factories import assign, label_namespace, make_cluster, make_namespace, make_team

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]   # the version is the Postgres triggers' log
DAY = date(2026, 3, 10)


@pytest.fixture(autouse=True)
def fresh():
    resolvers.forget()
    yield
    resolvers.forget()


def mapping_reads(queries) -> list[str]:
    return [q["sql"] for q in queries if "teams_namespacelabel" in q["sql"] or "teams_namespaceassignment" in q["sql"]]


def test_a_second_call_reads_no_mapping_table_and_sees_the_same_teams():
    prod = make_cluster("prod")
    make_namespace(prod, "ml", label_team="vision")
    first = team_resolver()
    assert first.team(prod.pk, "ml", DAY) == "vision"
    with CaptureQueriesContext(connection) as q:
        again = team_resolver()
    assert again is first
    assert mapping_reads(q.captured_queries) == []
    assert len(q.captured_queries) == 1          # the version: one query over the log
    # a set of clusters is kept apart from "every cluster"
    assert team_resolver([prod.pk]) is not first
    assert team_resolver([prod.pk]).team(prod.pk, "ml", DAY) == "vision"


def test_each_kind_of_mapping_write_is_seen_by_the_next_call():
    prod = make_cluster("prod")
    ns = make_namespace(prod, "ml", label_team="vision")
    assert team_resolver().team(prod.pk, "ml", DAY) == "vision"

    # a new label from the 5th on
    label_namespace(ns, "speech", datetime(2026, 3, 5, tzinfo=timezone.utc))
    assert team_resolver().team(prod.pk, "ml", DAY) == "speech"
    assert team_resolver().team(prod.pk, "ml", date(2026, 3, 1)) == "vision"

    # the admin maps it from the 8th on
    assign(prod, "ml", "platform", since=date(2026, 3, 8))
    assert team_resolver().team(prod.pk, "ml", DAY) == "platform"
    assert team_resolver().team(prod.pk, "ml", date(2026, 3, 6)) == "speech"

    # the team is renamed
    Team.objects.filter(name="platform").update(name="infra")
    assert team_resolver().team(prod.pk, "ml", DAY) == "infra"

    # label trust: only admin-made teams' labels count (speech is no team; vision becomes one)
    make_team("vision")
    Cluster.objects.filter(pk=prod.pk).update(label_trust=Cluster.LabelTrust.KNOWN_TEAMS)
    assert team_resolver().team(prod.pk, "ml", date(2026, 3, 6)) == "unassigned"
    assert team_resolver().team(prod.pk, "ml", date(2026, 3, 1)) == "vision"


def test_window_questions_answer_as_a_walk_of_every_history():
    """The precomputed change instants give what walking each namespace's history gives, at the
    window's open ends (a change exactly at the start or the end is outside)."""
    prod = make_cluster("prod")
    a = make_namespace(prod, "a", label_team="x")
    label_namespace(a, "y", datetime(2026, 3, 5, 6, tzinfo=timezone.utc))
    label_namespace(a, "y", datetime(2026, 3, 6, tzinfo=timezone.utc))       # same label: no change
    label_namespace(a, "x", datetime(2026, 3, 9, tzinfo=timezone.utc))
    assign(prod, "b", "z", since=date(2026, 3, 7))
    r = team_resolver()
    start, end = datetime(2026, 3, 5, 6, tzinfo=timezone.utc), datetime(2026, 3, 31, tzinfo=timezone.utc)
    assert r.label_changes(start, end) == {prod.pk: [datetime(2026, 3, 9, tzinfo=timezone.utc)]}
    assert r.team_changes(datetime(2026, 3, 1, tzinfo=timezone.utc), end) == [
        datetime(2026, 3, 5, 6, tzinfo=timezone.utc), datetime(2026, 3, 7, tzinfo=timezone.utc),
        datetime(2026, 3, 9, tzinfo=timezone.utc)]
    assert r.namespaces_of({"y"}) == {"a"} and r.namespaces_of({"z"}) == {"b"}
    assert r.namespaces_of({"y", "unassigned"}) is None
