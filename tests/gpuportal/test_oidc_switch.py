"""OIDC single sign-on is off by default, on when all its variables are set, refused when half set.

Settings and URLs are read once at start-up, so each case runs in a fresh process (on a
throw-away SQLite database: the sign-in redirect stores its state in the session).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow   # each case migrates and runs Django in a child process
OIDC_ENV = {
    "OIDC_RP_CLIENT_ID": "portal", "OIDC_RP_CLIENT_SECRET": "s3cret",
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "http://127.0.0.1:9/auth", "OIDC_OP_TOKEN_ENDPOINT": "http://127.0.0.1:9/token",
    "OIDC_OP_USER_ENDPOINT": "http://127.0.0.1:9/user", "OIDC_OP_JWKS_ENDPOINT": "http://127.0.0.1:9/jwks",
}
PROBE = """
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.test import Client
c = Client(HTTP_HOST="127.0.0.1")
login = c.get("/accounts/login/")
print("sso-link", b"single sign-on" in login.content)
sso = c.get("/oidc/authenticate/")
print("sso", sso.status_code, sso.get("Location", "")[:32])
"""


def run(tmp_path, extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OIDC_")}
    env.update(extra, DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", DJANGO_SETTINGS_MODULE="gpuportal.settings")
    return subprocess.run([sys.executable, "manage.py", "shell", "-c", PROBE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_sso_is_off_without_the_variables(tmp_path):
    out = run(tmp_path, {})
    assert out.returncode == 0, out.stderr
    assert "sso-link False" in out.stdout and "sso 404" in out.stdout


def test_sso_redirects_to_the_provider_when_configured(tmp_path):
    out = run(tmp_path, OIDC_ENV)
    assert out.returncode == 0, out.stderr
    assert "sso-link True" in out.stdout
    assert "sso 302 http://127.0.0.1:9/auth?" in out.stdout


def test_half_configured_sso_stops_start_up(tmp_path):
    out = run(tmp_path, {"OIDC_RP_CLIENT_ID": "portal"})
    assert out.returncode != 0
    assert "OIDC is half configured" in out.stderr and "OIDC_OP_TOKEN_ENDPOINT" in out.stderr


def test_a_provider_endpoint_the_client_would_read_otherwise_stops_start_up(tmp_path):
    """The single sign-on endpoints pass the outbound URL rules that need no settings (issue 42):
    a backslash before an `@`, credentials in the URL or another scheme stop the start."""
    for name, url, said in [("OIDC_OP_TOKEN_ENDPOINT", "http://127.0.0.2:9\\@idp.example/token", "contains a backslash"),
                            ("OIDC_OP_USER_ENDPOINT", "https://alice:pw@idp.example/user", "carries a user name"),
                            ("OIDC_OP_JWKS_ENDPOINT", "file:///etc/jwks", "not an http or https URL")]:
        out = run(tmp_path, {**OIDC_ENV, name: url})
        assert out.returncode != 0 and f"{name}: " in out.stderr and said in out.stderr, out.stderr[-500:]
        assert "pw" not in out.stderr.split("ImproperlyConfigured")[-1]


LOCKED_PROBE = """
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.conf import settings
from django.test import Client
c = Client(HTTP_HOST="127.0.0.1")
codes = [c.post("/accounts/login/", {"username": "mallory", "password": "guess"}).status_code for _ in range(6)]
print("password", codes[-1])
print("sso", c.get("/oidc/authenticate/").status_code)
print("first", settings.AUTHENTICATION_BACKENDS[0])
"""


def test_sso_is_not_behind_the_password_lockout(tmp_path):
    """An address locked out of the password form still reaches single sign-on, whose backend
    is asked before the throttling one (the identity provider throttles its own sign-in)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OIDC_")}
    env.update(OIDC_ENV, DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", DJANGO_SETTINGS_MODULE="gpuportal.settings")
    out = subprocess.run([sys.executable, "manage.py", "shell", "-c", LOCKED_PROBE], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "password 429" in out.stdout and "sso 302" in out.stdout
    assert "first gpuportal.oidc.RoleMappingOIDCBackend" in out.stdout
