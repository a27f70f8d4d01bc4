"""Signing in: password sign-in throttling (django-axes), the authentication backends and optional
single sign-on (OpenID Connect) (docs/security.md)."""
from datetime import timedelta  # noqa: F401
from pathlib import Path  # noqa: F401

from django.core.exceptions import ImproperlyConfigured  # noqa: F401

from gpuportal.envtyped import env, env_float as _env_float, env_int as _env_int  # noqa: F401

from gpuportal.settings.framework import INSTALLED_APPS

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
