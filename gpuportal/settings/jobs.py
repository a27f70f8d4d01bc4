"""Settings of the background jobs: Celery and its broker, quota advice and alerts, e-mail and
statements by e-mail (docs/configuration.md). Star-imported by gpuportal/settings/__init__.py, the
one DJANGO_SETTINGS_MODULE; read from the environment once, as every part is."""
from django.core.exceptions import ImproperlyConfigured

from gpuportal.envtyped import env, env_float as _env_float, env_int as _env_int

REDIS_URL = env.str("REDIS_URL", default="")

# Celery: with no broker configured, tasks run eagerly in-process (the demo's default). The
# in-memory broker is named with a host, or kombu warns "No hostname was supplied" in the log.
CELERY_BROKER_URL = REDIS_URL or "memory://localhost/"
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A task whose worker died unacknowledged is redelivered after this (acks_late).
# Workers look for such tasks every CELERY_UNACKED_RESTORE_SECONDS (kombu's default: 100 s).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": _env_int("CELERY_VISIBILITY_TIMEOUT", 3900),
    "unacked_restore_interval": _env_int("CELERY_UNACKED_RESTORE_SECONDS", 100),
    "unacked_restore_throttle": 1,
}
# Every key the portal writes to Redis starts with this: the broker's (kombu's global_keyprefix)
# and the cache's (KEY_PREFIX, gpuportal/settings/framework.py), e.g. ingest's "already queued" marks. Two
# portals, or two test runs, can then share one Redis database without taking each other's
# tasks or seeing each other's marks (docs/configuration.md).
REDIS_KEY_PREFIX = env.str("REDIS_KEY_PREFIX", default="")
if REDIS_KEY_PREFIX:
    CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = REDIS_KEY_PREFIX
CELERY_TIMEZONE = "UTC"
INGEST_BEAT_MINUTES = _env_int("INGEST_BEAT_MINUTES", 10)

# Quota advice and alerts (docs/advice-and-alerts.md).
ADVICE_WINDOW_DAYS = _env_int("ADVICE_WINDOW_DAYS", 28)
ADVICE_LOW_EFFICIENCY = _env_float("ADVICE_LOW_EFFICIENCY", 0.5, 0.0, 1.0)
ADVICE_AT_HARD_SHARE = _env_float("ADVICE_AT_HARD_SHARE", 0.1, 0.0, 1.0)
ADVICE_RESOURCEQUOTA_NAME = env.str("ADVICE_RESOURCEQUOTA_NAME", default="gpu-quota")
# Right-sizing (docs/advice-and-alerts.md, "Right-sizing"): room left above a workload's
# framebuffer peak and P95 activity, and the replicas per GPU of the time-slicing config.
RIGHTSIZE_HEADROOM = _env_float("RIGHTSIZE_HEADROOM", 0.15, 0.0, 1.0)
RIGHTSIZE_SHARE_REPLICAS = _env_int("RIGHTSIZE_SHARE_REPLICAS", 4)
# The clusters run HAMi: whole GPUs may be advised a HAMi share (workloads on one always may).
RIGHTSIZE_HAMI = env.bool("RIGHTSIZE_HAMI", default=False)
ALERT_IDLE_MINUTES = _env_int("ALERT_IDLE_MINUTES", 30)
ALERT_LOOKBACK_HOURS = _env_int("ALERT_LOOKBACK_HOURS", 24)
ALERT_BEAT_MINUTES = _env_int("ALERT_BEAT_MINUTES", 15)
ALERT_EMAIL_TO = env.list("ALERT_EMAIL_TO", default=[])
ALERT_WEBHOOK_URL = env.str("ALERT_WEBHOOK_URL", default="")
# Hosts the portal may send requests to: cluster Prometheus URLs and alert webhooks
# (apps/clusters/outbound.py, docs/security.md "Outbound requests"). Empty: any host.
OUTBOUND_ALLOWED_HOSTS = [h.strip() for h in env.list("OUTBOUND_ALLOWED_HOSTS", default=[]) if h.strip()]
ALERT_WEBHOOK_TIMEOUT_SECONDS = _env_float("ALERT_WEBHOOK_TIMEOUT_SECONDS", 10.0, 0.1)
ALERT_WEBHOOK_MAX_RETRIES = _env_int("ALERT_WEBHOOK_MAX_RETRIES", 6, low=0)
PORTAL_URL = env.str("PORTAL_URL", default="http://localhost:8000")
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env.str("EMAIL_HOST", default="localhost")
EMAIL_PORT = _env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", default=False)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="gpuportal@localhost")
EMAIL_TIMEOUT = _env_float("EMAIL_TIMEOUT", 30.0, 1.0)   # seconds; a silent SMTP server must not hold a worker

# Statements by e-mail (docs/chargeback.md, "Statements by e-mail"): on every close, and with
# STATEMENT_SCHEDULE (a five-field cron line, in UTC like Celery beat) the month to date.
STATEMENT_SEND_MAX_RETRIES = _env_int("STATEMENT_SEND_MAX_RETRIES", 5, low=0)
STATEMENT_SCHEDULE = env.str("STATEMENT_SCHEDULE", default="").strip()
if STATEMENT_SCHEDULE:
    from celery.schedules import crontab as _crontab

    _cron = STATEMENT_SCHEDULE.split()
    try:
        if len(_cron) != 5:
            raise ValueError("it needs five fields: minute hour day-of-month month day-of-week")
        STATEMENT_CRONTAB = _crontab(minute=_cron[0], hour=_cron[1], day_of_month=_cron[2], month_of_year=_cron[3],
                                     day_of_week=_cron[4])
    except Exception as exc:  # noqa: BLE001 — celery's cron parser raises several classes
        raise ImproperlyConfigured(f"STATEMENT_SCHEDULE={STATEMENT_SCHEDULE!r} is not a cron line like "
                                   f"'0 7 * * 1' ({exc})") from None
