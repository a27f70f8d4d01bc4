"""`manage.py`'s process: the cyclic collector is off during start-up only, start-up's objects
are frozen out of its reach before the command runs, and a command's exit skips the final
collections (docs/performance.md, "The collector at start-up and exit"). Runs manage.py in a
child process."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def manage(*args):
    env = {**os.environ, "DEBUG": "true", "REDIS_URL": "", "DJANGO_SETTINGS_MODULE": "gpuportal.settings"}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_command_runs_with_the_collector_on_and_start_up_frozen():
    result = manage("shell", "-c", "import gc; print(gc.isenabled(), gc.get_freeze_count())")
    assert result.returncode == 0, result.stderr
    enabled, frozen = result.stdout.splitlines()[-1].split()
    assert enabled == "True"                  # a long command (runserver, shell) still collects cycles
    assert int(frozen) > 50_000               # Django's and the apps' start-up objects, frozen


def test_a_failing_command_still_exits_with_its_error():
    result = manage("ingest", "--cluster", "any", "--start", "not-a-date", "--end", "2026-01-02")
    assert result.returncode == 1
    assert "--start='not-a-date' is not an ISO 8601 date or instant" in result.stderr
