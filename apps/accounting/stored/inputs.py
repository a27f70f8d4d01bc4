"""The inputs of a stored month answer, declared once (docs/performance.md, "Stored month answers").

Every table an answer is computed from is listed here, with how a write to it is logged in
`accounting_inputchange`: by the dates it touched (usage), or once per statement for the other
inputs (mapping, rates, frozen cells). Postgres triggers are generated from these lists and kept
in step with them on every `migrate` (`sync_triggers`, connected in `AccountingConfig.ready`), and
`tests/accounting/stored/test_inputs.py` fails when computing an answer reads a table that is in
none of them. SQLite (the demo) has no triggers: there answers are computed on every read.

Statement-level AFTER triggers with transition tables: one small INSERT per statement, however
many rows it wrote (ingest's COPY included). Usage tables log each date they touched; the other
inputs log one undated row, and only when a column the answers read actually changed (ingest
updates `ingested_until` and `label_seen_at` on every run; those change no answer).
"""
from __future__ import annotations

from apps.accounting.models.answers import InputChange

FUNCTIONS = r"""
CREATE OR REPLACE FUNCTION accounting_log_dated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    expr text := CASE TG_ARGV[0] WHEN 'hour' THEN '(hour_start AT TIME ZONE ''UTC'')::date' ELSE 'day' END;
    sel text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        sel := format('SELECT %s FROM new_rows', expr);
    ELSIF TG_OP = 'DELETE' THEN
        sel := format('SELECT %s FROM old_rows', expr);
    ELSE
        sel := format('SELECT %s FROM new_rows UNION SELECT %s FROM old_rows', expr, expr);
    END IF;
    EXECUTE format('INSERT INTO accounting_inputchange (category, source, day, at) '
                   'SELECT ''usage'', %L, d, now() FROM (SELECT DISTINCT d FROM (%s) AS t(d)) AS u ORDER BY d',
                   TG_TABLE_NAME, sel);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION accounting_log_undated() RETURNS trigger LANGUAGE plpgsql AS $$
-- TG_ARGV[0]: the category; TG_ARGV[1] (updates): the columns whose change counts, or '*';
-- 'always': log every statement (a trigger without transition tables).
DECLARE
    changed boolean;
    cols text[];
    cond text;
BEGIN
    IF TG_OP = 'TRUNCATE' OR TG_ARGV[1] = 'always' THEN
        changed := true;
    ELSIF TG_OP = 'INSERT' THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM new_rows)' INTO changed;
    ELSIF TG_OP = 'DELETE' THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM old_rows)' INTO changed;
    ELSIF TG_ARGV[1] = '*' THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM new_rows)' INTO changed;
    ELSE
        cols := string_to_array(TG_ARGV[1], ',');
        SELECT string_agg(format('o.%1$I IS DISTINCT FROM n.%1$I', c), ' OR ') INTO cond FROM unnest(cols) AS c;
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE %s)', cond)
            INTO changed;
    END IF;
    IF changed THEN
        INSERT INTO accounting_inputchange (category, source, day, at) VALUES (TG_ARGV[0], TG_TABLE_NAME, NULL, now());
    END IF;
    RETURN NULL;
END $$;
"""

# The undated categories a caller names (`ledger.answer.usage_version(also=…)`); `InputChange` holds them all.
RATES, OWNERS, QUOTA = InputChange.RATES, InputChange.OWNERS, InputChange.QUOTA  # named with the log's model

DATED = {"accounting_usagehour": "hour", "accounting_usageday": "day", "accounting_usagedaybuilt": "day",
         "accounting_usagepodday": "day", "accounting_usagepoddaybuilt": "day"}
# table: [(category, columns whose update counts ('*': any), which events)]
UNDATED = {
    "accounting_rate": [(RATES, "*", "IUD"), ("mapping", "effective_from", "IUD")],
    "accounting_nodepool": [("mapping", "*", "IUD")],
    "teams_namespaceassignment": [("mapping", "*", "IUD")],
    "teams_namespacelabel": [("mapping", "*", "IUD")],
    "teams_labelclaim": [("mapping", "*", "IUD")],
    "teams_team": [("mapping", "name", "IUD")],
    "teams_namespace": [("mapping", "name,cluster_id", "UD")],   # a new namespace has no label yet
    "clusters_cluster": [("mapping", "name,label_trust", "IUD")],
    # Read by no month answer, but by stored page parts (`ledger.answer.usage_version(also=…)`): the
    # right-sizing block and rows (pod owners name the workloads), the team page's quota table and
    # the quota advice's histories.
    "accounting_podowner": [(OWNERS, "owner_kind,owner_name,workload_kind,workload_name", "IUD")],
    "accounting_quotahour": [(QUOTA, "*", "IUD")],
    # what waits against a quota: the quota advice's histories read it with the quota hours
    "accounting_queueddemandhour": [(QUOTA, "*", "IUD")],
}
# Logged on every statement, without transition tables: a close inserts a month's hundreds of
# thousands of frozen cells at once, and only closes and reopens write them. Only the stored
# late data of closed months reads them (and a close stores that afresh).
ALWAYS = {"accounting_frozenday": "frozen"}


def _trigger(table, name, event, function, args):
    ref = {"INSERT": "REFERENCING NEW TABLE AS new_rows", "DELETE": "REFERENCING OLD TABLE AS old_rows",
           "UPDATE": "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows"}[event]
    return (f"CREATE TRIGGER {name} AFTER {event} ON {table} {ref} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {function}({args});")


# Read by every answer but not versioned: which months are closed (one row per month, read on
# every request), the answers' own storage, and the clusters' names as looked up with the rows.
NOT_VERSIONED = {"accounting_billingperiod", "accounting_monthanswer", "accounting_monthcell",
                 "accounting_monthline", "accounting_monthbody", "accounting_inputchange"}
# Read by answers and versioned through another input: the rate history is written with every
# rate change (logged as `rates`); a closed month's frozen lines only by its close, whose instant
# is the closed statement's version. The histories of the pools, clusters, teams, claims and label rows are
# written with every change of their table (logged as `mapping`); a closed month's late data reads
# them as they stood at its close (docs/accounting.md, "Late data for a closed month").
FOLLOWS = {"accounting_historicalrate": "accounting_rate", "accounting_statementline": "accounting_billingperiod",
           "accounting_historicalnodepool": "accounting_nodepool", "clusters_historicalcluster": "clusters_cluster",
           "teams_historicalteam": "teams_team", "teams_historicallabelclaim": "teams_labelclaim",
           "teams_historicalnamespacelabel": "teams_namespacelabel"}


def input_tables() -> set[str]:
    """Every table a month answer may read."""
    return set(DATED) | set(UNDATED) | set(ALWAYS) | NOT_VERSIONED | set(FOLLOWS)


def statements(tables: set[str] | None = None) -> list[str]:
    """The functions and triggers declared above; only those on `tables`, when given (a migration
    creates the triggers of the tables that exist at its point in history)."""
    out = [FUNCTIONS]

    def declared(table):
        return tables is None or table in tables

    for table, kind in DATED.items():
        if not declared(table):
            continue
        for event in ("INSERT", "UPDATE", "DELETE"):
            out.append(_trigger(table, f"{table}_log_{event.lower()}", event, "accounting_log_dated", f"'{kind}'"))
        out.append(f"CREATE TRIGGER {table}_log_truncate AFTER TRUNCATE ON {table} "
                   f"FOR EACH STATEMENT EXECUTE FUNCTION accounting_log_undated('mapping', '*');")
    for table, rules in UNDATED.items():
        if not declared(table):
            continue
        for category, columns, events in rules:
            for letter, event in (("I", "INSERT"), ("U", "UPDATE"), ("D", "DELETE")):
                if letter in events:
                    out.append(_trigger(table, f"{table}_{category}_{event.lower()}", event,
                                        "accounting_log_undated", f"'{category}', '{columns}'"))
            out.append(f"CREATE TRIGGER {table}_{category}_truncate AFTER TRUNCATE ON {table} "
                       f"FOR EACH STATEMENT EXECUTE FUNCTION accounting_log_undated('{category}', '*');")
    for table, category in ALWAYS.items():
        if not declared(table):
            continue
        for event in ("INSERT", "UPDATE", "DELETE", "TRUNCATE"):
            out.append(f"CREATE TRIGGER {table}_{category}_{event.lower()} AFTER {event} ON {table} "
                       f"FOR EACH STATEMENT EXECUTE FUNCTION accounting_log_undated('{category}', 'always');")
    return out


def drops():
    out = []
    for table in DATED:
        for event in ("insert", "update", "delete", "truncate"):
            out.append(f"DROP TRIGGER IF EXISTS {table}_log_{event} ON {table};")
    for table, rules in UNDATED.items():
        for category, _columns, _events in rules:
            for event in ("insert", "update", "delete", "truncate"):
                out.append(f"DROP TRIGGER IF EXISTS {table}_{category}_{event} ON {table};")
    for table, category in ALWAYS.items():
        for event in ("insert", "update", "delete", "truncate"):
            out.append(f"DROP TRIGGER IF EXISTS {table}_{category}_{event} ON {table};")
    out.append("DROP FUNCTION IF EXISTS accounting_log_dated(); DROP FUNCTION IF EXISTS accounting_log_undated();")
    return out



def sync_triggers(connection) -> None:
    """Make the logging triggers exactly those the lists above declare: drop every trigger that
    calls the logging functions, then create the declared ones (idempotent; Postgres only)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cur:
        cur.execute("SELECT to_regproc('accounting_log_undated') IS NOT NULL")
        if cur.fetchone()[0]:
            cur.execute("SELECT t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                        "WHERE NOT t.tgisinternal AND t.tgfoid IN ('accounting_log_dated'::regproc, "
                        "'accounting_log_undated'::regproc)")
            for name, table in cur.fetchall():
                cur.execute(f'DROP TRIGGER IF EXISTS "{name}" ON "{table}"')
        for sql in statements():
            cur.execute(sql)
