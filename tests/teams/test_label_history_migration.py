"""teams 0003 turns each namespace's one undated label into history valid since ever: every
hour resolves as before, and running it again adds nothing."""
import importlib
from datetime import date, datetime, timezone

import pytest
from django.apps import apps as django_apps

from apps.clusters.models import Cluster
from apps.teams.models import SINCE_EVER, Namespace, NamespaceLabel
from apps.teams.resolve import TeamResolver

pytestmark = pytest.mark.django_db

migration = importlib.import_module("apps.teams.migrations.0003_namespace_label_history")


def test_existing_labels_become_history_since_ever():
    prod = Cluster.objects.create(name="prod", prometheus_url="http://prom.example:9090")
    seen = datetime(2026, 3, 20, 10, tzinfo=timezone.utc)
    ml = Namespace.objects.create(cluster=prod, name="ml", label_team="research", label_seen_at=seen)
    bare = Namespace.objects.create(cluster=prod, name="bare", label_team="", label_seen_at=seen)
    never = Namespace.objects.create(cluster=prod, name="never")       # no label ever seen
    kept = Namespace.objects.create(cluster=prod, name="kept", label_team="search", label_seen_at=seen)
    NamespaceLabel.objects.create(namespace=kept, valid_from=datetime(2026, 3, 1, tzinfo=timezone.utc),
                                  team_label="search")

    migration.label_history_from_latest(django_apps, None)
    migration.label_history_from_latest(django_apps, None)          # twice: nothing more

    rows = set(NamespaceLabel.objects.values_list("namespace__name", "valid_from", "team_label"))
    assert rows == {("ml", SINCE_EVER, "research"), ("bare", SINCE_EVER, ""),
                    ("kept", datetime(2026, 3, 1, tzinfo=timezone.utc), "search")}
    assert not NamespaceLabel.objects.filter(namespace=never).exists()
    resolver = TeamResolver()
    assert resolver.team(prod.pk, "ml", date(2024, 1, 1)) == "research"
    assert resolver.team(prod.pk, "ml", date(2026, 11, 1)) == "research"
    assert resolver.team(prod.pk, "bare", date(2026, 3, 1)) == "unassigned"
    assert resolver.team(prod.pk, "never", date(2026, 3, 1)) == "unassigned"
    assert ml.label_team == "research" and bare.label_team == ""
