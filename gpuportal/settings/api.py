"""The REST API: tokens, DRF's classes and throttle rates, the pages' own throttle and the OpenAPI
document (docs/api.md, docs/security.md)."""
from datetime import timedelta  # noqa: F401
from pathlib import Path  # noqa: F401

from django.core.exceptions import ImproperlyConfigured  # noqa: F401

from gpuportal.envtyped import env, env_float as _env_float, env_int as _env_int  # noqa: F401

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
