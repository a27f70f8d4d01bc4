"""The portal's own knobs: the billing zone and money locale, ingest and accounting, report limits,
the FOCUS export's names, stored month bodies and where gunicorn shares its metrics
(docs/configuration.md)."""
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from babel import Locale, UnknownLocaleError

from datetime import timedelta  # noqa: F401
from pathlib import Path  # noqa: F401

from django.core.exceptions import ImproperlyConfigured  # noqa: F401

from gpuportal.envtyped import env, env_float as _env_float, env_int as _env_int  # noqa: F401

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
# Endpoints that read hourly rows per pod (idle GPUs) cost ~25x a daily read for the same window:
# their own, shorter limit; right-sizing reads every hourly row of each workload with its
# percentiles, and has its own (docs/security.md, "No request ties up the portal").
MAX_HOURLY_REPORT_DAYS = _env_int("MAX_HOURLY_REPORT_DAYS", 93)
MAX_RIGHTSIZING_DAYS = _env_int("MAX_RIGHTSIZING_DAYS", 31)
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

# Stored month bodies: at most this many per month and this many MB of them, and dropped when not
# rendered for this many days (docs/security.md, "Stored answers").
MONTH_BODIES_PER_PERIOD = env.int("MONTH_BODIES_PER_PERIOD", default=2000)
MONTH_BODY_MB_PER_PERIOD = env.int("MONTH_BODY_MB_PER_PERIOD", default=256)
MONTH_BODY_KEEP_DAYS = env.int("MONTH_BODY_KEEP_DAYS", default=31)
