"""An expected 403 logs one line (#43, item 5): before, every refusal of a team not the
viewer's logged the PermissionDenied's full traceback, twice under DEBUG (Django's own console
handler and the root's)."""
import logging

import pytest

from tests.support.factories import make_team, make_user

pytestmark = pytest.mark.django_db


class Kept(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


def test_a_refusal_is_one_line_and_logged_once(client):
    make_team("nlp")
    vision = make_team("vision")
    client.force_login(make_user("lead", "team_lead", teams=[vision]))
    kept = Kept()
    logger = logging.getLogger("django.request")
    logger.addHandler(kept)
    try:
        assert client.get("/teams/nlp/").status_code == 403
    finally:
        logger.removeHandler(kept)
    [record] = kept.records
    assert record.exc_info is None and record.getMessage() == "Forbidden (Permission denied): /teams/nlp/"
    assert "Traceback" not in logging.Formatter().format(record)


SCRIPT = """
import logging, django
django.setup()
try:
    raise PermissionDenied("team nlp is not yours")
except PermissionDenied as exc:
    logging.getLogger("django.request").warning("Forbidden (Permission denied): %s", "/teams/nlp/",
                                                extra={"status_code": 403}, exc_info=exc)
    logging.getLogger("django.request").error("Internal Server Error: %s", "/boom/",
                                              extra={"status_code": 500}, exc_info=exc)
"""


def test_under_debug_the_portal_writes_a_refusal_once(tmp_path):
    """The portal as it starts (settings.LOGGING, DEBUG on as in the demo): the 403 is one line on
    stderr, written once; a 500 keeps its traceback."""
    import os
    import subprocess
    import sys
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "gpuportal.settings", "DEBUG": "true"}
    script = "from django.core.exceptions import PermissionDenied\n" + SCRIPT
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    lines = out.stderr.splitlines()
    assert lines.count("Forbidden (Permission denied): /teams/nlp/") == 1, out.stderr
    assert lines.count("Internal Server Error: /boom/") == 1
    assert out.stderr.count("Traceback") == 1 and out.stderr.index("Traceback") > out.stderr.index("/boom/")
