"""Security settings: debug mode and the secret key, allowed hosts, the keys and places of cluster
credentials, the Content-Security-Policy, browser headers and TLS, and who may read /metrics
(docs/security.md)."""
from datetime import timedelta  # noqa: F401
from pathlib import Path  # noqa: F401

from django.core.exceptions import ImproperlyConfigured  # noqa: F401

from gpuportal.envtyped import env, env_float as _env_float, env_int as _env_int  # noqa: F401

BASE_DIR = Path(__file__).resolve().parent.parent.parent

# Off unless asked for (docs/security.md, "Production settings"): `make demo`, `make test` and
# a development shell set DEBUG=true themselves. With DEBUG off, SECRET_KEY must be set and must
# not be the development key below, which is public (and the cluster credentials' encryption
# key is derived from it when CREDENTIALS_KEY is unset).
DEBUG = env.bool("DEBUG", default=False)
DEVELOPMENT_SECRET_KEY = "dev-only-insecure-key-change-me"
SECRET_KEY = env.str("SECRET_KEY", default="")
if not DEBUG and SECRET_KEY.strip() in ("", DEVELOPMENT_SECRET_KEY):
    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (a long random value, e.g. "
                               "`openssl rand -hex 32`; DEBUG=true only for development and the demo)")
SECRET_KEY = SECRET_KEY or DEVELOPMENT_SECRET_KEY
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# Key(s) that encrypt cluster credentials kept in the database (docs/security.md): Fernet keys,
# comma-separated, the first encrypts; unset, one is derived from SECRET_KEY.
CREDENTIALS_KEY = env.str("CREDENTIALS_KEY", default="")
for _key in filter(None, (k.strip() for k in CREDENTIALS_KEY.split(","))):
    try:
        import base64 as _b64
        if len(_b64.urlsafe_b64decode(_key.encode())) != 32:
            raise ValueError
    except ValueError:
        raise ImproperlyConfigured("CREDENTIALS_KEY holds a key that is not a Fernet key (32 url-safe base64 bytes; "
                                   "make one with: python -c 'from cryptography.fernet import Fernet; "
                                   "print(Fernet.generate_key().decode())')") from None

# Where cluster credential *sources* may point (apps/clusters/secrets.py, docs/security.md):
# `file:` only under this directory, `env:` only variables with this prefix; empty turns that
# kind of source off. Anything else is refused, so a cluster record cannot read /etc/passwd or
# SECRET_KEY and send it to its Prometheus URL.
CLUSTER_CREDENTIALS_DIR = env.str("CLUSTER_CREDENTIALS_DIR", default="/var/run/secrets/prometheus").strip()
if CLUSTER_CREDENTIALS_DIR and not CLUSTER_CREDENTIALS_DIR.startswith("/"):
    raise ImproperlyConfigured(f"CLUSTER_CREDENTIALS_DIR={CLUSTER_CREDENTIALS_DIR!r} is not an absolute path")
if CLUSTER_CREDENTIALS_DIR.rstrip("/") in ("", "/proc", "/etc", "/sys", "/dev") and CLUSTER_CREDENTIALS_DIR:
    raise ImproperlyConfigured(f"CLUSTER_CREDENTIALS_DIR={CLUSTER_CREDENTIALS_DIR!r} would let a cluster read "
                               "system files; name the directory where the credential Secrets are mounted")
CLUSTER_CREDENTIALS_ENV_PREFIX = env.str("CLUSTER_CREDENTIALS_ENV_PREFIX", default="PROMETHEUS_").strip()

# Content-Security-Policy (django-csp; docs/security.md): scripts only from the portal's own
# static files — no inline script anywhere (charts are JSON drawn by static/js/portal.js), no
# eval — and no framing. Inline styles stay allowed: plotly sets them as it draws.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "worker-src": ["'self'", "blob:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# `/metrics`, and the per-cluster ingest detail of `/healthz`, answer only a scraper that sends
# `Authorization: Bearer <METRICS_TOKEN>` (docs/deploy.md "/metrics"); with no token they are
# open only when METRICS_PUBLIC is on, which defaults to DEBUG (development and the demo).
METRICS_TOKEN = env.str("METRICS_TOKEN", default="").strip()
METRICS_PUBLIC = env.bool("METRICS_PUBLIC", default=DEBUG)

# Browser-facing headers, on in every mode (Django's defaults, stated so they cannot drift).
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = env.str("SECURE_REFERRER_POLICY", default="same-origin")
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
# Probes and scrapes come over plain HTTP from inside the cluster: a redirect to https would
# read as success to a kubelet (any 3xx passes) and fail Prometheus (docs/deploy.md "Probes").
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^livez$", r"^metrics$"]
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"

if not DEBUG:
    # Behind a TLS-terminating proxy the scheme arrives in a header. SECURE_PROXY_SSL_HEADER
    # names it (empty: trust no header, e.g. gunicorn serving TLS itself); SECURE_SSL_REDIRECT=false
    # when the proxy already redirects plain HTTP (or for a local plain-HTTP run, as `make load` does).
    _proxy_header = env.str("SECURE_PROXY_SSL_HEADER", default="HTTP_X_FORWARDED_PROTO")
    SECURE_PROXY_SSL_HEADER = (_proxy_header, "https") if _proxy_header else None
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = _env_int("SECURE_HSTS_SECONDS", 31536000, low=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
