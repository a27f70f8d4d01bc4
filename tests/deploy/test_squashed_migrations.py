"""The folded migrations (docs/architecture.md, "Migrations"): a database that applied the old
chains has nothing to apply, and what the folded migrations run besides creating tables (the
role groups, the accounting SQL) is tested by importing it and running it against a state."""
import importlib

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

from apps.accounting.stored.inputs import ALWAYS, DATED, UNDATED
from apps.teams.access import ROLES

pytestmark = pytest.mark.django_db

teams_migration = importlib.import_module("apps.teams.migrations.0001_squashed_0008")
accounting_migration = importlib.import_module("apps.accounting.migrations.0001_squashed_0012")
frozen_days_migration = importlib.import_module("apps.accounting.migrations.0013_frozen_days")
label_history_migration = importlib.import_module("apps.teams.migrations.0009_namespace_label_history")

# What django_migrations held for these apps before the fold (frozen here: the names are gone).
OLD_CHAINS = {
    "clusters": ["0001_initial", "0002_cluster_queue_quota", "0003_ingest_real_clusters", "0004_sealed_credentials",
                 "0005_prometheus_url_service_names", "0006_label_trust", "0007_change_history"],
    "teams": ["0001_initial", "0002_role_groups", "0003_namespace_label_history", "0004_label_trust",
              "0005_change_history", "0006_teams_for_label_values", "0007_api_tokens", "0008_sign_in_identity"],
    "accounting": ["0001_initial", "0002_rates_periods", "0003_usage_day", "0004_change_history",
                   "0005_rate_card_version", "0006_month_answers", "0007_input_change_triggers", "0008_month_bodies",
                   "0009_frozen_cells_unchecked", "0010_frozen_cells_brin", "0011_month_bodies_gzipped",
                   "0012_pod_owner"],
}
SQUASHED = {("clusters", "0001_squashed_0007"), ("teams", "0001_squashed_0008"),
            ("accounting", "0001_squashed_0012")}
# Written after the fold.
LATER = [("accounting", "0013_frozen_days"), ("accounting", "0014_bulk_rows_unchecked"),
         ("clusters", "0008_cluster_archived"), ("accounting", "0015_period_watermarks"),
         ("teams", "0009_namespace_label_history"), ("accounting", "0016_usage_hour_dra_claim"),
         ("accounting", "0017_rate_imports"), ("accounting", "0018_frozen_idle"),
         ("accounting", "0019_pod_days")]


def state_apps(app, name):
    """The models as they stand right after the migration `app.name`."""
    return MigrationExecutor(connection).loader.project_state((app, name), at_end=True).apps


def test_each_squashed_migration_replaces_its_whole_old_chain():
    loader = MigrationLoader(None, ignore_no_migrations=True)
    for app, name in SQUASHED:
        assert loader.disk_migrations[app, name].replaces == [(app, old) for old in OLD_CHAINS[app]]
    assert {key for key in loader.disk_migrations if key[0] in OLD_CHAINS} == SQUASHED | set(LATER)


def test_a_database_migrated_with_the_old_chains_has_only_the_later_migrations_to_apply():
    recorder = MigrationRecorder(connection)
    recorder.migration_qs.filter(app__in=OLD_CHAINS).delete()
    for app, names in OLD_CHAINS.items():
        for name in names:
            recorder.record_applied(app, name)

    loader = MigrationLoader(connection)
    loader.check_consistent_history(connection)       # raises InconsistentMigrationHistory
    assert SQUASHED <= set(loader.applied_migrations)
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    # each app's later migrations in its own order; between apps the plan may interleave them
    applied = [(m.app_label, m.name) for m, backwards in plan if not backwards]
    assert sorted(applied) == sorted(LATER)
    for app in {a for a, _n in LATER}:
        assert [k for k in applied if k[0] == app] == [k for k in LATER if k[0] == app]


def test_the_role_groups_are_created_once_and_removed_only_when_empty():
    Group.objects.filter(name__in=ROLES).delete()
    apps = state_apps("teams", "0001_squashed_0008")
    teams_migration.create_groups(apps, None)
    teams_migration.create_groups(apps, None)         # twice: four groups still
    assert sorted(Group.objects.values_list("name", flat=True)) == sorted(ROLES)

    User.objects.create(username="fin").groups.add(Group.objects.get(name="finance"))
    teams_migration.remove_groups(apps, None)
    assert list(Group.objects.values_list("name", flat=True)) == ["finance"]


def test_the_label_rows_already_stored_are_dated_since_ever():
    """0009 dates every label row that has no history record yet at SINCE_EVER (so months closed
    before it read them as they are), once: a row already dated keeps its own record."""
    from apps.teams.models import SINCE_EVER, NamespaceLabel

    from tests.support.factories import label_namespace, make_cluster, make_namespace, utc

    ns = make_namespace(make_cluster(), "ml", label_team="alpha")
    dated = label_namespace(ns, "beta", since=utc(2026, 3, 15))          # written with its record
    NamespaceLabel.history.filter(id=ns.label_history.get(team_label="alpha").pk).delete()   # written before 0009
    apps = state_apps("teams", "0009_namespace_label_history")
    label_history_migration.date_the_rows_already_stored(apps, None)
    label_history_migration.date_the_rows_already_stored(apps, None)     # twice: nothing more
    records = sorted((h.team_label, h.history_date == SINCE_EVER) for h in NamespaceLabel.history.all())
    assert records == [("alpha", True), ("beta", False)]
    assert NamespaceLabel.history.filter(id=dated.pk).count() == 1


def triggered_tables():
    with connection.cursor() as cur:
        cur.execute("SELECT DISTINCT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                    "JOIN pg_proc p ON p.oid = t.tgfoid WHERE NOT t.tgisinternal "
                    "AND p.proname IN ('accounting_log_dated', 'accounting_log_undated')")
        return {row[0] for row in cur.fetchall()}


def range_indexes():
    with connection.cursor() as cur:
        cur.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'accounting_frozenday' "
                    "AND indexdef LIKE '%USING brin%'")
        return {row[0] for row in cur.fetchall()}


def body_storage():
    with connection.cursor() as cur:
        cur.execute("SELECT attstorage FROM pg_attribute WHERE attrelid = 'accounting_monthbody'::regclass "
                    "AND attname = 'body'")
        return cur.fetchone()[0]


def list_storage():
    with connection.cursor() as cur:
        cur.execute("SELECT DISTINCT attstorage FROM pg_attribute WHERE attrelid = 'accounting_frozenday'::regclass "
                    "AND attname = ANY(%s)", [list(frozen_days_migration.LISTS)])
        return {row[0] for row in cur.fetchall()}


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="triggers, BRIN and column storage are Postgres's")
def test_the_accounting_sql_goes_and_comes_back():
    """The triggers and the bodies' storage of the fold, the frozen days' indexes and list storage of
    0013: each dropped, then made again by the migration's own function."""
    apps = state_apps("accounting", "0013_frozen_days")
    frozen_days = {"accounting_frozenday_period_id_range", "accounting_frozenday_booked_in_id_range"}
    assert triggered_tables() == set(DATED) | set(UNDATED) | set(ALWAYS)
    assert (range_indexes(), body_storage(), list_storage()) == (frozen_days, "e", {"e"})

    with connection.schema_editor() as editor:
        accounting_migration.drop_input_change_triggers(apps, editor)
        frozen_days_migration.drop_indexes(apps, editor)
        editor.execute("ALTER TABLE accounting_monthbody ALTER COLUMN body SET STORAGE EXTENDED")
        editor.execute("ALTER TABLE accounting_frozenday " + ", ".join(
            f"ALTER COLUMN {c} SET STORAGE EXTENDED" for c in frozen_days_migration.LISTS))
    assert (triggered_tables(), range_indexes(), body_storage(), list_storage()) == (set(), set(), "x", {"x"})

    with connection.schema_editor() as editor:
        accounting_migration.input_change_triggers(apps, editor)
        frozen_days_migration.storage_and_indexes(apps, editor)
        accounting_migration.bodies_uncompressed(apps, editor)
    assert triggered_tables() == set(DATED) | set(UNDATED) | set(ALWAYS)
    assert (range_indexes(), body_storage(), list_storage()) == (frozen_days, "e", {"e"})
