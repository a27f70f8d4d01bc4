"""Django itself: installed apps, middleware, templates, the database and its timeouts, the
cache, passwords, language and time, static files and logging."""
import re

from datetime import timedelta  # noqa: F401
from pathlib import Path  # noqa: F401

from django.core.exceptions import ImproperlyConfigured  # noqa: F401

from gpuportal.envtyped import env, env_float as _env_float, env_int as _env_int  # noqa: F401

from gpuportal.settings.security import BASE_DIR, DEBUG
from gpuportal.settings.jobs import REDIS_KEY_PREFIX, REDIS_URL

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
