"""Settings, read from the environment once (docs/configuration.md).

Every variable has a safe development default; a malformed value stops start-up with
ImproperlyConfigured instead of surfacing later as a confusing runtime error.
"""
import re
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from babel import Locale, UnknownLocaleError
from django.core.exceptions import ImproperlyConfigured

from .envtyped import env, env_float as _env_float, env_int as _env_int

BASE_DIR = Path(__file__).resolve().parent.parent

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

BILLING_TIMEZONE = env.str("BILLING_TIMEZONE", default="UTC")
try:
    ZoneInfo(BILLING_TIMEZONE)
except (ZoneInfoNotFoundError, ValueError):
    raise ImproperlyConfigured(f"BILLING_TIMEZONE={BILLING_TIMEZONE!r} is not an IANA time zone")

# The locale money is written in on the pages, e.g. en_US "¥1,234", de_DE "1.234,57 €"
# (docs/dates-and-money.md). CSV, XLSX and the API stay locale-free plain numbers.
MONEY_LOCALE = env.str("MONEY_LOCALE", default="en_US")
try:
    MONEY_LOCALE = str(Locale.parse(MONEY_LOCALE))
except (ValueError, TypeError, UnknownLocaleError):
    raise ImproperlyConfigured(f"MONEY_LOCALE={MONEY_LOCALE!r} is not a locale babel knows (e.g. en_US, de_DE, ja_JP)")

# Accounting knobs (docs/accounting.md). Cluster records may override the idle threshold.
IDLE_THRESHOLD = _env_float("IDLE_THRESHOLD", 0.05, 0.0, 1.0)
INGEST_CHUNK_HOURS = _env_int("INGEST_CHUNK_HOURS", 0, low=0)         # 0: sized by INGEST_CHUNK_SAMPLES
INGEST_CHUNK_SAMPLES = _env_int("INGEST_CHUNK_SAMPLES", 200_000)  # utilization samples a chunk may hold
# Scale knobs (docs/performance.md): queries of a chunk in flight at once, and whether the
# next chunk is fetched while the current one is written.
INGEST_QUERY_CONCURRENCY = _env_int("INGEST_QUERY_CONCURRENCY", 4)
INGEST_PREFETCH = env.bool("INGEST_PREFETCH", default=True)
INGEST_PROMETHEUS_AGGREGATES = env.bool("INGEST_PROMETHEUS_AGGREGATES", default=True)
# A cluster's ingest lock expires this long after its holder's last sign of life (each chunk
# renews it), so a killed worker blocks its cluster for minutes, not hours.
INGEST_LOCK_SECONDS = _env_int("INGEST_LOCK_SECONDS", 600)
# Beat re-reads this many closed hours behind the watermark: late samples and gaps that
# Prometheus fills afterwards (remote-write lag, a restarted exporter) are picked up.
INGEST_SETTLE_HOURS = _env_int("INGEST_SETTLE_HOURS", 3, low=0)
INGEST_RETRY_BACKOFF_SECONDS = _env_int("INGEST_RETRY_BACKOFF_SECONDS", 30)
PROMETHEUS_TIMEOUT_SECONDS = _env_float("PROMETHEUS_TIMEOUT_SECONDS", 60.0, 0.1)
# Ask Prometheus for gzipped answers: worth it only over a slow link (docs/performance.md,
# "Answers uncompressed"); gzip costs Prometheus several times the query itself.
PROMETHEUS_COMPRESSION = env.bool("PROMETHEUS_COMPRESSION", default=False)
STALE_INGEST_HOURS = _env_float("STALE_INGEST_HOURS", 3.0, 0.0)
# Idle-GPU report (docs/figures.md): a pod averaging under IDLE_LIST_UTILIZATION (used ÷ allocated)
# with an idle stretch of at least IDLE_LIST_MIN_MINUTES is listed.
IDLE_LIST_UTILIZATION = _env_float("IDLE_LIST_UTILIZATION", 0.10, 0.0, 1.0)
IDLE_LIST_MIN_MINUTES = _env_float("IDLE_LIST_MIN_MINUTES", 30.0, 0.0)
MAX_REPORT_DAYS = _env_int("MAX_REPORT_DAYS", 400)
# Endpoints that read hourly rows per pod (idle GPUs, right-sizing) cost ~25x a daily read for the
# same window: their own, shorter limit (docs/security.md, "No request ties up the portal").
MAX_HOURLY_REPORT_DAYS = _env_int("MAX_HOURLY_REPORT_DAYS", 93)
# Reads of hourly rows per pod one user may have running at once (apps/web/throttle.py); 0: no limit.
LONG_READS_PER_USER = _env_int("LONG_READS_PER_USER", 2, low=0)

# Who the FOCUS export names as provider, publisher and invoice issuer, and as the billing
# account (docs/chargeback.md, "FOCUS export"); FOCUS wants each non-empty.
FOCUS_PROVIDER_NAME = env.str("FOCUS_PROVIDER_NAME", default="gpuportal").strip()
FOCUS_BILLING_ACCOUNT_ID = env.str("FOCUS_BILLING_ACCOUNT_ID", default="gpuportal").strip()
FOCUS_BILLING_ACCOUNT_NAME = env.str("FOCUS_BILLING_ACCOUNT_NAME", default=FOCUS_BILLING_ACCOUNT_ID).strip()
# FOCUS 1.3's HostProviderName: who runs the machines the GPUs are in (a cloud, or the portal's own
# operator); unset, the service provider itself, as FOCUS 1.3 wants when no other host is shown.
FOCUS_HOST_PROVIDER_NAME = env.str("FOCUS_HOST_PROVIDER_NAME", default=FOCUS_PROVIDER_NAME).strip() or FOCUS_PROVIDER_NAME
for _name in ("FOCUS_PROVIDER_NAME", "FOCUS_BILLING_ACCOUNT_ID", "FOCUS_BILLING_ACCOUNT_NAME"):
    if not globals()[_name]:
        raise ImproperlyConfigured(f"{_name} is empty; FOCUS rows must name it (leave it unset for 'gpuportal')")

# Where gunicorn's workers share their request metrics (docs/deploy.md "/metrics"); unset: one
# process keeps them in memory. prometheus-client switches mode on the variable's mere presence,
# so an empty or missing directory is refused here rather than at the first request.
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default="")
if "PROMETHEUS_MULTIPROC_DIR" in env.ENVIRON and not (PROMETHEUS_MULTIPROC_DIR and Path(PROMETHEUS_MULTIPROC_DIR).is_dir()):
    raise ImproperlyConfigured(
        f"PROMETHEUS_MULTIPROC_DIR={PROMETHEUS_MULTIPROC_DIR!r} is not a directory; create it or unset the variable")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "knox",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "apps.clusters",
    "apps.teams",
    "apps.ingest",
    "apps.accounting",
    "apps.recommendations",
    "apps.reports",
    "apps.simulator",
    "axes",
    "simple_history",
]

MIDDLEWARE = [
    "gpuportal.metrics.RequestMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "gpuportal.dbtimeout.StatementTimeoutMiddleware",   # before any query; static files need none
    "gpuportal.middleware.RejectNulMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "gpuportal.middleware.PrivateNoStoreMiddleware",
    "gpuportal.middleware.AnswerComputedMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",   # who made a change through the admin
    "gpuportal.middleware.PortalNotFoundMiddleware",   # DEBUG (the demo): the portal's 404, not Django's
    "axes.middleware.AxesMiddleware",          # last: turns a lockout into the locked-out page
]

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

ROOT_URLCONF = "gpuportal.urls"
WSGI_APPLICATION = "gpuportal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # The project's own tags: the nav links every app's pages (tests/repo/test_template_layers.py).
            "libraries": {"portal_nav": "gpuportal.navigation"},
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
}
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=0))
# Memory a Postgres sort or hash may use before it spills to disk, per connection: a month's
# per-day cells at 10,000 GPUs (230,000 groups) sort on disk at Postgres's default 4MB and take
# twice as long (docs/performance.md, "Bulk writes"). Empty: the server's own setting (a
# pooler in transaction mode, such as PgBouncer, refuses start-up options).
DATABASE_WORK_MEM = env.str("DATABASE_WORK_MEM", default="64MB")
if DATABASE_WORK_MEM and DATABASES["default"]["ENGINE"].endswith("postgresql"):
    if not re.fullmatch(r"\d+\s*(kB|MB|GB)", DATABASE_WORK_MEM):
        raise ImproperlyConfigured(f"DATABASE_WORK_MEM={DATABASE_WORK_MEM!r} is not a size such as 64MB (kB, MB or GB)")
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options["options"] = f"{_options.get('options', '')} -c work_mem={DATABASE_WORK_MEM.replace(' ', '')}".strip()
# Postgres statement_timeout per kind of work (gpuportal/dbtimeout.py; docs/security.md, "No
# request ties up the portal"), in seconds; 0 leaves the server's own.
STATEMENT_TIMEOUT_SECONDS = _env_float("STATEMENT_TIMEOUT_SECONDS", 30.0, low=0)
STATEMENT_TIMEOUT_EXPORT_SECONDS = _env_float("STATEMENT_TIMEOUT_EXPORT_SECONDS", 300.0, low=0)
STATEMENT_TIMEOUT_WORKER_SECONDS = _env_float("STATEMENT_TIMEOUT_WORKER_SECONDS", 1800.0, low=0)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Celery, quota advice and alerts, e-mail and statement delivery: what the background jobs read
# (REDIS_URL among them).
from .settings_jobs import *  # noqa: E402,F401,F403
from .settings_jobs import REDIS_KEY_PREFIX, REDIS_URL  # noqa: E402

if REDIS_URL:
    # Fails open while Redis is away (gpuportal/cache.py): an empty cache, logged and counted.
    CACHES = {"default": {"BACKEND": "gpuportal.cache.FailOpenRedisCache", "LOCATION": REDIS_URL,
                          "KEY_PREFIX": REDIS_KEY_PREFIX,
                          "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2}}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
     "OPTIONS": {"min_length": _env_int("PASSWORD_MIN_LENGTH", 12, low=8)}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Sign-in throttling (django-axes; docs/security.md, gpuportal/signin.py): SIGNIN_FAILURE_LIMIT
# failures for one user name from one address lock that name at that address, and
# SIGNIN_ADDRESS_FAILURE_LIMIT failures from one address across all names lock the address, for
# SIGNIN_LOCKOUT_MINUTES. Admins see and clear lockouts in the Django admin ("Axes").
# The address is REMOTE_ADDR, or with TRUSTED_PROXY_COUNT = N > 0 the entry the outermost trusted
# proxy appended to X-Forwarded-For (entry -N; never one the client wrote itself).
AXES_ENABLED = env.bool("SIGNIN_THROTTLING", default=True)
AXES_FAILURE_LIMIT = _env_int("SIGNIN_FAILURE_LIMIT", 5)
SIGNIN_ADDRESS_FAILURE_LIMIT = _env_int("SIGNIN_ADDRESS_FAILURE_LIMIT", 20)
if SIGNIN_ADDRESS_FAILURE_LIMIT < AXES_FAILURE_LIMIT:
    raise ImproperlyConfigured(f"SIGNIN_ADDRESS_FAILURE_LIMIT={SIGNIN_ADDRESS_FAILURE_LIMIT} must be at least "
                               f"SIGNIN_FAILURE_LIMIT={AXES_FAILURE_LIMIT} (it counts every user name's failures)")
AXES_COOLOFF_TIME = timedelta(minutes=_env_int("SIGNIN_LOCKOUT_MINUTES", 30))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]   # this order: gpuportal.signin reads it
AXES_HANDLER = "gpuportal.signin.SigninHandler"
AXES_CLIENT_IP_CALLABLE = "gpuportal.signin.client_address"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
TRUSTED_PROXY_COUNT = _env_int("TRUSTED_PROXY_COUNT", 0, low=0)
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",        # first: refuses a locked-out user or address
    "django.contrib.auth.backends.ModelBackend",
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env.str("STATIC_ROOT", default=str(BASE_DIR / "staticfiles"))
WHITENOISE_USE_FINDERS = DEBUG
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "reports:overview"
LOGOUT_REDIRECT_URL = "login"

# Optional single sign-on (OpenID Connect, mozilla-django-oidc): on only when the client and
# every provider endpoint are configured, so a half-set environment fails loudly, not silently.
OIDC_ENV = ("OIDC_RP_CLIENT_ID", "OIDC_RP_CLIENT_SECRET", "OIDC_OP_AUTHORIZATION_ENDPOINT",
            "OIDC_OP_TOKEN_ENDPOINT", "OIDC_OP_USER_ENDPOINT", "OIDC_OP_JWKS_ENDPOINT")
_oidc_set = [name for name in OIDC_ENV if env.str(name, default="")]
OIDC_ENABLED = len(_oidc_set) == len(OIDC_ENV)
if _oidc_set and not OIDC_ENABLED:
    raise ImproperlyConfigured(
        "OIDC is half configured; also set " + ", ".join(n for n in OIDC_ENV if n not in _oidc_set))
if OIDC_ENABLED:
    INSTALLED_APPS.append("mozilla_django_oidc")
    for _name in OIDC_ENV:
        globals()[_name] = env.str(_name)
    # The provider's endpoints as the HTTP client reads them: no backslash, credentials or
    # other scheme (docs/security.md, "Outbound requests").
    from apps.clusters.outbound import spelling_problem as _spelling_problem  # noqa: E402
    for _name in OIDC_ENV[2:]:
        if _problem := _spelling_problem(globals()[_name]):
            raise ImproperlyConfigured(f"{_name}: {_problem}")
    OIDC_RP_SIGN_ALGO = env.str("OIDC_RP_SIGN_ALGO", default="RS256")
    OIDC_RP_SCOPES = env.str("OIDC_RP_SCOPES", default="openid email profile")
    OIDC_ROLES_CLAIM = env.str("OIDC_ROLES_CLAIM", default="groups")
    OIDC_OP_LOGOUT_URL = env.str("OIDC_OP_LOGOUT_URL", default="")
    # Single sign-on comes first, so a locked-out address never blocks it (the identity
    # provider throttles its own sign-in); the password form stays behind axes.
    AUTHENTICATION_BACKENDS = ["gpuportal.oidc.RoleMappingOIDCBackend", *AUTHENTICATION_BACKENDS]
    LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/"

# API tokens (docs/security.md, "API tokens"): knox keys made on /account/tokens/, stored as
# digests, with an expiry and a scope. Keys of DRF's older token table (plain text, no expiry)
# work only with API_LEGACY_TOKENS=true (the migration path in docs/api.md); read per request.
API_LEGACY_TOKENS = env.bool("API_LEGACY_TOKENS", default=False)
KNOX_TOKEN_MODEL = "knox.AuthToken"    # knox's own table (its model is declared swappable)
REST_KNOX = {"TOKEN_PREFIX": "gpp_", "AUTH_HEADER_PREFIX": "Token", "TOKEN_TTL": None, "AUTO_REFRESH": False}
REST_FRAMEWORK = {
    # A refused query string from the report data modules answers 400, as a DRF ValidationError does.
    "EXCEPTION_HANDLER": "apps.web.drf.exception_handler",
    # `?format=` with no value is a 400, as the OpenAPI document's enum says.
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "apps.web.drf.StrictFormatNegotiation",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.teams.tokens.PortalTokenAuthentication",
        "apps.teams.tokens.LegacyTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": [
        "gpuportal.json.FastJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
        "apps.web.csv.SafeCSVRenderer",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Fails open when its cache is unreachable (apps/web/throttle.py; docs/security.md, "Throttling").
    "DEFAULT_THROTTLE_CLASSES": ["apps.web.throttle.FailOpenUserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"user": env.str("API_THROTTLE_RATE", default="600/min")},
}
# Pages have their own per-user count (empty: the API's rate), docs/security.md "Throttling".
PAGE_THROTTLE_RATE = env.str("PAGE_THROTTLE_RATE", default="") or None
# Stored month bodies: at most this many per month and this many MB of them, and dropped when not
# rendered for this many days (docs/security.md, "Stored answers").
MONTH_BODIES_PER_PERIOD = env.int("MONTH_BODIES_PER_PERIOD", default=2000)
MONTH_BODY_MB_PER_PERIOD = env.int("MONTH_BODY_MB_PER_PERIOD", default=256)
MONTH_BODY_KEEP_DAYS = env.int("MONTH_BODY_KEEP_DAYS", default=31)

SPECTACULAR_SETTINGS = {
    "TITLE": "gpuportal API",
    "DESCRIPTION": (
        "GPU usage, chargeback, idle-GPU and quota advice (see docs/api.md, docs/accounting.md and "
        "docs/figures.md).\n\nAuthenticate with a token: `Authorization: Token <key>` (make one on your "
        "account page, /account/tokens/: read-only or read-write, with an expiry), or with the portal's "
        "sign-in session in a browser. "
        "What a role may see is the same as on the pages: team leads their own teams, money for "
        "finance and admins."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Like every other /api/v1/ endpoint: signed-in users and tokens only (the docs pages too).
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI and ReDoc from the drf-spectacular-sidecar package, served as our own static
    # files: the docs pages load nothing from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No badge from the public Swagger validator (it would send our schema's URL out).
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "gpuportal.openapi.document_errors",
                            "gpuportal.openapi.describe_parameters"],
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

LOG_LEVEL = env.str("LOG_LEVEL", default="WARNING")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"one_line_refusals": {"()": "gpuportal.errors.OneLineRefusals"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # Transport retries are reported once, as the ingest error, not line by line.
        "urllib3": {"level": "ERROR"},
        # Django's own records once, through the one console handler (its default adds a second
        # console handler under DEBUG); an expected refusal (403, 404, 405…) is one line, a 5xx
        # keeps its traceback (docs/security.md, "Logs").
        "django": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "django.request": {"filters": ["one_line_refusals"]},
    },
}
