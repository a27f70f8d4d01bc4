"""Production settings (DEBUG off): `check --deploy` clean, security headers, secure cookies,
and WhiteNoise serving collected static files. Each case runs Django in a subprocess, because
settings are read from the environment once, at import."""
import os
import re
import secrets
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow   # each case runs Django (and gunicorn) in a child process
HOST = "portal.example.com"


def prod_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "SECURE_", "STATIC_ROOT"))}
    env.update(DEBUG="false", SECRET_KEY=secrets.token_urlsafe(64), ALLOWED_HOSTS=HOST,
               DJANGO_SETTINGS_MODULE="gpuportal.settings", REDIS_URL="")
    env.update(extra)
    return env


def run(args, env, timeout=180):
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_check_deploy_is_clean_with_production_settings():
    result = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], prod_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout, result.stdout + result.stderr
    assert "WARNINGS" not in result.stdout + result.stderr


def test_production_refuses_to_start_without_a_secret_key():
    env = prod_env()
    env.pop("SECRET_KEY")
    result = run(["manage.py", "check"], env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def bare_env(**extra):
    """What a bare `docker run` gives the settings: nothing of the portal's own."""
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "HOME", "LANG", "PYTHONPATH", "VIRTUAL_ENV") or k.startswith("LC_")}
    env.update(DJANGO_SETTINGS_MODULE="gpuportal.settings", DATABASE_URL=os.environ["DATABASE_URL"], **extra)
    return env


DEFAULTS = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.DEBUG, s.API_LEGACY_TOKENS, s.METRICS_PUBLIC, repr(s.METRICS_TOKEN))")


def test_a_bare_start_refuses_without_a_secret_key():
    """DEBUG used to default to on, with a public development key: a bare start ran, and cluster
    credentials were encrypted with a key derived from that public one."""
    result = run(["manage.py", "check"], bare_env())
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr.strip().splitlines()[-1]


def test_the_public_development_key_is_refused_in_production():
    result = run(["manage.py", "check"], bare_env(SECRET_KEY="dev-only-insecure-key-change-me"))
    assert result.returncode != 0 and "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_defaults_are_the_safe_ones():
    result = run(["-c", DEFAULTS], bare_env(SECRET_KEY=secrets.token_urlsafe(64)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False", "False", "''"]
    development = run(["-c", DEFAULTS], bare_env(DEBUG="true"))
    assert development.returncode == 0, development.stderr
    assert development.stdout.split() == ["True", "False", "True", "''"]


PROBE = textwrap.dedent("""
    import json, django
    django.setup()
    from django.conf import settings
    from django.test import Client
    c = Client()
    out = {"settings": {k: getattr(settings, k) for k in (
        "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_SSL_REDIRECT", "SECURE_PROXY_SSL_HEADER",
        "SECURE_HSTS_SECONDS", "SECURE_CONTENT_TYPE_NOSNIFF", "X_FRAME_OPTIONS", "SECURE_REFERRER_POLICY")}}
    plain = c.get("/accounts/login/", HTTP_HOST="portal.example.com")
    out["plain"] = [plain.status_code, plain.get("Location", "")]
    tls = c.get("/accounts/login/", HTTP_HOST="portal.example.com", HTTP_X_FORWARDED_PROTO="https")
    out["tls"] = [tls.status_code, dict(tls.headers.items()),
                  {n: {"secure": bool(m["secure"]), "httponly": bool(m["httponly"])} for n, m in tls.cookies.items()}]
    def fetch(path, **headers):
        r = c.get(path, HTTP_HOST="portal.example.com", HTTP_X_FORWARDED_PROTO="https", **headers)
        body = b"".join(r.streaming_content) if r.streaming else r.content
        return [r.status_code, r.get("Content-Type", ""), len(body), r.get("Cache-Control", ""),
                r.get("Content-Encoding", "")]
    from django.templatetags.static import static
    bundle = static("js/plotly-cartesian.min.js")      # the name pages render: content-hashed
    out["bundle"] = bundle
    out["static"] = fetch(bundle)
    out["static_br"] = fetch(bundle, HTTP_ACCEPT_ENCODING="br, gzip")
    out["static_gzip"] = fetch(bundle, HTTP_ACCEPT_ENCODING="gzip")
    print(json.dumps(out, default=list))
""")


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    """collectstatic into a temp STATIC_ROOT with DEBUG off, then requests through the test client."""
    import json
    static_root = tmp_path_factory.mktemp("static")
    env = prod_env(STATIC_ROOT=str(static_root))
    # Compressing every static file (brotli and gzip) takes about a minute of CPU: on a shared
    # machine, or beside a second pytest-xdist worker, 180 s was too short a leash.
    collected = run(["manage.py", "collectstatic", "--noinput", "-v", "0"], env, timeout=600)
    assert collected.returncode == 0, collected.stderr
    assert (static_root / "staticfiles.json").exists(), "the manifest storage is used when DEBUG is off"
    result = run(["-c", PROBE], env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_security_settings_when_debug_is_off(probe):
    s = probe["settings"]
    assert s["SESSION_COOKIE_SECURE"] and s["CSRF_COOKIE_SECURE"] and s["SECURE_SSL_REDIRECT"]
    assert s["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert s["SECURE_HSTS_SECONDS"] >= 31536000
    assert s["SECURE_CONTENT_TYPE_NOSNIFF"] and s["X_FRAME_OPTIONS"] == "DENY"
    assert s["SECURE_REFERRER_POLICY"] == "same-origin"


def test_plain_http_is_redirected_to_https(probe):
    status, location = probe["plain"]
    assert status == 301 and location == f"https://{HOST}/accounts/login/"


def test_https_answers_carry_the_security_headers_and_secure_cookies(probe):
    status, headers, cookies = probe["tls"]
    assert status == 200
    assert headers["Strict-Transport-Security"].startswith("max-age=31536000")
    assert "includeSubDomains" in headers["Strict-Transport-Security"]
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    assert cookies["csrftoken"]["secure"]


def test_whitenoise_serves_collected_static_files_with_debug_off(probe):
    status, content_type, size, cache, encoding = probe["static"]
    assert status == 200
    assert "javascript" in content_type
    assert size > 1_000_000 and encoding == ""  # the chart bundle, whole, for a client asking no compression
    assert "max-age" in cache


def test_the_chart_bundle_is_content_hashed_cached_for_good_and_compressed(probe):
    """docs/performance.md, "Pages": the partial plotly bundle, under a name that changes with its
    content, so browsers keep it for a year; brotli or gzip on the wire."""
    assert re.fullmatch(r"/static/js/plotly-cartesian\.min\.[0-9a-f]{12}\.js", probe["bundle"]), probe["bundle"]
    _, _, whole, cache, _ = probe["static"]
    assert "immutable" in cache and "max-age=315360000" in cache
    status, _, br_size, _, encoding = probe["static_br"]
    assert status == 200 and encoding == "br"
    _, _, gz_size, _, gz_encoding = probe["static_gzip"]
    assert gz_encoding == "gzip"
    assert br_size < gz_size < whole / 2
    assert br_size < 600_000        # the whole plotly.js was 4.8 MB, 1.4 MB gzipped


def test_ssl_redirect_and_proxy_header_are_configurable_for_a_tls_terminating_proxy():
    code = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.SECURE_SSL_REDIRECT, s.SECURE_PROXY_SSL_HEADER)")
    result = run(["-c", code], prod_env(SECURE_SSL_REDIRECT="false", SECURE_PROXY_SSL_HEADER=""))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "None"]
