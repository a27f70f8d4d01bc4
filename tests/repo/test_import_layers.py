"""The layer order holds (docs/architecture.md): `lint-imports` keeps every contract in
pyproject.toml, and the contracts bite: an import that runs back up breaks them."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    """`lint-imports` on the packages under cwd (and only those: PYTHONPATH is cwd)."""
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=cwd, env={**os.environ, "PYTHONPATH": str(cwd)},
                          capture_output=True, text=True, timeout=120)


def test_every_import_contract_is_kept():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.fixture
def tree(tmp_path):
    """A copy of the code and the contracts, to break on purpose."""
    for name in ("apps", "gpuportal"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def add_import(tree: Path, module: str, line: str):
    path = tree / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text() + f"\n{line}\n")


@pytest.mark.parametrize("module, line, broken", [
    # accounting sits below ingest: the billing-day helpers moved down for this reason
    ("apps.accounting.usage.cells", "from apps.ingest.pipeline import floor_hour",
     "apps.accounting is not allowed to import apps.ingest"),
    # reports and advice are independent siblings
    ("apps.recommendations.views", "from apps.reports.views.common import page",
     "apps.recommendations is not allowed to import apps.reports"),
    ("apps.reports.views.overview", "from apps.recommendations.advice import advice_rows",
     "apps.reports is not allowed to import apps.recommendations"),
    # nothing below the project imports it
    ("apps.reports.xlsx", "from gpuportal.json import FastJSONRenderer",
     "apps.reports is not allowed to import gpuportal"),
    # clusters (inventory) is below teams (tenancy)
    ("apps.clusters.models", "from apps.teams.access import ROLES",
     "apps.clusters is not allowed to import apps.teams"),
    ("apps.ingest.writer", "from apps.simulator.scenario import Scenario",
     "apps.ingest is not allowed to import apps.simulator"),
    ("apps.reports.views.chargeback", "from apps.reports.api.chargeback import SeesMoney",
     "apps.reports.views.chargeback is not allowed to import apps.reports.api"),
    # the report data modules answer a bad query string without DRF (apps/web/params.py)
    ("apps.reports.data.idle", "from rest_framework.exceptions import ValidationError",
     "apps.reports.data is not allowed to import rest_framework"),
    # ... not even through a helper that speaks DRF (the old picker reached it through api/params.py)
    ("apps.reports.data.explore", "from apps.web.drf import exception_handler",
     "apps.reports.data is not allowed to import rest_framework"),
    # a query string is parsed once, in apps/accounting/query/filters.py: no view parses dates itself
    ("apps.reports.views.idle", "from apps.accounting.calendar.parse import parse_instant",
     "apps.reports is not allowed to import apps.accounting.calendar.parse"),
    ("apps.recommendations.api", "from apps.accounting.calendar.parse import parse_instant",
     "apps.recommendations is not allowed to import apps.accounting.calendar.parse"),
    # nothing above accounting reads the rollup models: they go through accounting/rollup_reader.py
    ("apps.reports.data.idle", "from apps.accounting.models import UsageHour",
     "apps.reports.data.idle is not allowed to import apps.accounting.models"),
    ("apps.recommendations.history", "from apps.accounting.models.rollups import QuotaHour",
     "apps.recommendations.history is not allowed to import apps.accounting.models.rollups"),
    # notifications knows no domain: it sits below tenancy, just above the plumbing
    ("apps.notifications.sending", "from apps.teams.access import is_admin",
     "apps.notifications is not allowed to import apps.teams"),
    ("apps.notifications.channels", "from apps.reports.models import StatementDelivery",
     "apps.notifications is not allowed to import apps.reports"),
    # statements and alerts send through apps.notifications, never by their own HTTP client
    ("apps.reports.delivery", "import requests",
     "apps.reports is not allowed to import requests"),
    ("apps.recommendations.notify", "import requests",
     "apps.recommendations is not allowed to import requests"),
    # the token page is teams': a teams module may not reach up for the report shell
    ("apps.teams.views", "from apps.reports.views.common import page",
     "apps.teams is not allowed to import apps.reports"),
    ("apps.reports.views.overview", "from apps.teams.tokens import tokens_of",
     "apps.reports is not allowed to import apps.teams.tokens"),
    # the rate API stays a pages-layer view: accounting holds no DRF
    ("apps.accounting.pricing.rates", "from rest_framework.exceptions import ValidationError",
     "apps.accounting is not allowed to import rest_framework"),
    # accounting answers with data; CSV, workbooks and DRF answers are the reports' (docs/architecture.md)
    ("apps.accounting.ledger.statements", "import csv", "apps.accounting is not allowed to import csv"),
    ("apps.accounting.ledger.money", "from openpyxl import Workbook", "apps.accounting is not allowed to import openpyxl"),
    ("apps.accounting.ledger.daily_money", "from rest_framework.response import Response",
     "apps.accounting is not allowed to import rest_framework"),
    # accounting's rooms import down only (apps/accounting/__init__.py, docs/architecture.md)
    ("apps.accounting.usage.cells", "from apps.accounting.ledger.statements import statement",
     "apps.accounting.usage is not allowed to import apps.accounting.ledger"),
    ("apps.accounting.stored.answers", "from apps.accounting.usage.cells import usage_cells",
     "apps.accounting.stored is not allowed to import apps.accounting.usage"),
    ("apps.accounting.ledger.money", "from apps.accounting.forecast.teams import month_forecast",
     "apps.accounting.ledger is not allowed to import apps.accounting.forecast"),
    # the store is under what it stores: it is handed the recompute task, never imports it
    ("apps.accounting.stored.refresh", "from apps.accounting.tasks import prepare_month_answers",
     "apps.accounting.stored is not allowed to import apps.accounting.tasks"),
    # rooms on one floor are independent
    ("apps.accounting.query.filters", "from apps.accounting.forecast.teams import is_running",
     "apps.accounting.query is not allowed to import apps.accounting.forecast"),
    # core is plain Python
    ("apps.accounting.core.lines", "from django.conf import settings",
     "apps.accounting.core is not allowed to import django"),
    ("apps.accounting.core.rounding", "from apps.accounting.models import Rate",
     "apps.accounting.core is not allowed to import apps.accounting.models"),
    # one front door to the stored answers
    ("apps.reports.views.overview", "from apps.accounting.stored.responses import body",
     "apps.reports is not allowed to import apps.accounting.stored.responses"),
    ("gpuportal.middleware", "from apps.accounting.stored.versions import stored_answers",
     "gpuportal is not allowed to import apps.accounting.stored.versions"),
    # the cycle alerts <-> tasks that dispatching deliveries from alerts.py used to make
    ("apps.recommendations.alerts", "from apps.recommendations.tasks import deliver_alert",
     "No cycles are allowed in apps.recommendations"),
])
def test_an_import_against_the_flow_breaks_a_contract(tree, module, line, broken):
    add_import(tree, module, line)
    result = lint_imports(tree)
    assert result.returncode == 1, result.stdout
    assert broken in " ".join(result.stdout.split()), result.stdout


def test_accounting_imports_no_http_or_template_code():
    """What the contracts cannot say (they see django whole): apps/accounting builds no HTTP
    response and renders no template — the admin's redirect aside."""
    import ast

    found = []
    for path in sorted((ROOT / "apps/accounting").rglob("*.py")):
        if path.name == "admin.py" or "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names
                      if n.split(".")[:2] in (["django", "http"], ["django", "template"])]
    assert found == []


def product_nodes(allowed: set[str], *, migrations: bool = True):
    """(path relative to the repo, AST node) of every node of the product's modules (apps/ and
    gpuportal/), but those in `allowed` (and migrations, unless `migrations`)."""
    import ast

    for path in sorted([*(ROOT / "apps").rglob("*.py"), *(ROOT / "gpuportal").rglob("*.py")]):
        rel = str(path.relative_to(ROOT))
        if rel in allowed or (not migrations and "migrations" in path.parts):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            yield rel, node


def test_only_the_bulk_writer_speaks_copy():
    """Rows are written in bulk in one place (apps/accounting/db/bulk.py, docs/architecture.md):
    no other product module opens a COPY. The bench's seeder (a test tool) writes its own."""
    import ast

    found = [f"{rel}:{node.lineno}"
             for rel, node in product_nodes({"apps/accounting/db/bulk.py", "apps/simulator/benchseed.py"})
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "copy"
             and any(isinstance(a, (ast.Constant, ast.JoinedStr)) and "COPY" in ast.unparse(a) for a in node.args)]
    assert found == []


def test_only_the_resolver_layer_builds_team_resolvers():
    """The team mapping is read through one layer (apps/accounting/usage/team_mapping.py, kept per version
    of its logged inputs): no other product module builds a `TeamResolver` itself, which would
    read every label and mapping of the fleet again on each call."""
    import ast

    found = [f"{rel}:{node.lineno}" for rel, node in product_nodes({"apps/accounting/usage/team_mapping.py"}, migrations=False)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "TeamResolver"]
    assert found == []


def test_only_the_frozen_module_touches_frozen_cells():
    """Frozen cells have one home (apps/accounting/ledger/frozen.py): it alone knows they are stored by
    the day as columns. No other product module names their model or table (the models package
    defines it, migrations create it, the trigger declaration logs its writes)."""
    import ast

    allowed = {"apps/accounting/ledger/frozen.py", "apps/accounting/models/__init__.py", "apps/accounting/models/periods.py",
               "apps/accounting/stored/inputs.py"}
    found = []
    for rel, node in product_nodes(allowed, migrations=False):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else \
            node.name if isinstance(node, ast.alias) else node.value if isinstance(node, ast.Constant) else None
        if isinstance(name, str) and ("FrozenDay" in name or "accounting_frozenday" in name):
            found.append(f"{rel}:{getattr(node, 'lineno', '?')}")
    assert found == []
