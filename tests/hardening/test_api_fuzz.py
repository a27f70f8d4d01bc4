"""schemathesis, run as a generated client would: the `schemathesis` command against a live
server holding the seeded two-team database, as an admin with a token, with every check and the
stateful phase (operations chained through the links it infers: a rate created, read, changed,
deleted, then read again). No 5xx, no answer outside the schema, no schema-invalid request
accepted, and no schema-valid request refused except by a rule between parameters that the
operation documents (api_fuzz_checks.py; docs/api.md, "Rules between parameters").

The phases run by default are examples, fuzzing and stateful (about a minute). The coverage
phase walks every boundary of every parameter (each pattern, minimum, maximum, enum) and takes
a few minutes more: API_FUZZ_PHASES=examples,coverage,fuzzing,stateful runs it too.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .seed import seed

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES_PER_OPERATION = 10
SEED = 26
PHASES = os.environ.get("API_FUZZ_PHASES", "examples,fuzzing,stateful")


@pytest.mark.slow   # the schemathesis command runs in a child process
def test_api_holds_its_schema_under_fuzzing(transactional_db, live_server, settings, tmp_path, monkeypatch):
    from rest_framework.throttling import UserRateThrottle
    # Several hundred calls a minute as one user: above API_THROTTLE_RATE's default (600/min),
    # which tests/hardening/test_scoping.py checks; here the schema is what is under test.
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "100000/min"})
    world = seed()
    # identity: a whole month is sent gzip-compressed to a client that accepts it
    # (tests/accounting/test_month_bodies.py checks that); the schema is checked on plain bytes.
    command = [sys.executable, "-m", "schemathesis.cli", "run", f"{live_server.url}/api/v1/schema/?format=json",
               # every check; the one that wants every schema-valid request accepted runs through
               # api_fuzz_checks.positive_data_acceptance_but_cross_field_rules
               "--checks", "all", "--exclude-checks", "positive_data_acceptance",
               "--phases", PHASES, "--max-examples", str(EXAMPLES_PER_OPERATION), "--seed", str(SEED),
               "--workers", "1", "--suppress-health-check", "all",
               "-H", f"Authorization: Token {world.tokens['admin']}", "-H", "Accept-Encoding: identity",
               "--output-truncate", "false", "--no-color"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SCHEMATHESIS_HOOKS": "tests.hardening.api_fuzz_checks"}
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-30000:]
    for phase in ("Fuzzing", "Stateful"):
        assert f"✅  {phase}" in out, out[-3000:]     # ran and passed, not skipped
