"""`manage.py migrate` on an empty database, as docker-compose, the Kubernetes job and a
newcomer run it (docs/deploy.md). Django runs the database system checks before migrating;
a check that reads a table the migrations have not made yet stopped the very first migrate."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_migrate_runs_on_an_empty_database(tmp_path):
    db = tmp_path / "empty.sqlite3"
    env = {**os.environ, "DEBUG": "true", "DATABASE_URL": f"sqlite:///{db}", "REDIS_URL": ""}
    done = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Applying accounting.0001_squashed_0012... OK" in done.stdout
    # and a second run, now with every table, still passes its checks
    again = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "No migrations to apply." in again.stdout
