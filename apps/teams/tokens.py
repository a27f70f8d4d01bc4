"""Personal API tokens (docs/security.md, "API tokens"): made by their owner, shown once, stored
as a digest (django-rest-knox), with an expiry and a scope.

- `Authorization: Token gpp_…` authenticates as the token's owner, with the owner's scope
  (a team lead's token sees their teams only). An expired or revoked key is a 401.
- A read-only token may only read: any other method (POST, PUT, PATCH, DELETE: closing a
  period, changing a rate) is a 403 on every endpoint, decided here, where the token is known,
  rather than in each view's permissions.
- Keys without the `gpp_` prefix are left to the next authentication class (DRF's older token
  table, while `API_LEGACY_TOKENS` is on; docs/api.md).
Creating and revoking go through one function each, inside a transaction, with an audit row.
"""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from knox.auth import TokenAuthentication as KnoxTokenAuthentication
from knox.models import AuthToken
from knox.settings import knox_settings
from knox.signals import token_expired
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication as DRFTokenAuthentication
from rest_framework.authentication import get_authorization_header
from rest_framework.permissions import SAFE_METHODS

from .models import ApiToken, AuditEvent

EXPIRY_DAYS = (7, 30, 90, 365)          # the choices offered; no token lives longer than a year
NAME_MAX = 100
TOUCH_EVERY = timedelta(minutes=1)      # last_used_at is written at most once a minute per token


class TokenError(ValueError):
    pass


def portal_prefix() -> str:
    return knox_settings.TOKEN_PREFIX


class LegacyTokenAuthentication(DRFTokenAuthentication):
    """Keys of DRF's older token table (plain text, never expiring): accepted only while
    settings.API_LEGACY_TOKENS is on, read at each request (docs/api.md, "Tokens")."""

    def authenticate(self, request):
        if settings.API_LEGACY_TOKENS:
            return super().authenticate(request)
        parts = get_authorization_header(request).split()
        if len(parts) == 2 and parts[0].lower() == b"token":     # not a gpp_ key: the portal's class passed it on
            raise exceptions.AuthenticationFailed(
                f"Invalid token: keys without the {portal_prefix()} prefix are off (API_LEGACY_TOKENS); "
                "make a token on /account/tokens/")
        return None


class PortalTokenAuthentication(KnoxTokenAuthentication):
    """knox's digest look-up for `gpp_` keys, plus the token's scope and last use."""

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if len(parts) != 2 or parts[0].lower() != b"token" or not parts[1].startswith(portal_prefix().encode()):
            return None
        user, token = super().authenticate(request)
        info = ApiToken.objects.filter(token=token).only("read_only", "last_used_at").first()
        if info is None:        # a knox token the portal did not make: it has no scope, so no use
            raise exceptions.AuthenticationFailed("Invalid token.")
        if info.read_only and request.method not in SAFE_METHODS:
            raise exceptions.PermissionDenied(
                f"this token is read-only: {request.method} needs a read-write token (make one on /account/tokens/)")
        now = timezone.now()
        if info.last_used_at is None or now - info.last_used_at >= TOUCH_EVERY:
            ApiToken.objects.filter(pk=info.pk).update(last_used_at=now)
        return user, token

    def _cleanup_token(self, auth_token) -> bool:
        """Whether the token in hand has expired (then deleted, as knox does). knox also reads and
        deletes the owner's *other* expired tokens on every request — one more query on each API
        call (docs/performance.md, "make load"); here that is done when the owner opens their
        token list (`drop_expired_tokens`). An expired key is refused either way."""
        if auth_token.expiry is not None and auth_token.expiry < timezone.now():
            username = auth_token.user.get_username()
            auth_token.delete()
            token_expired.send(sender=self.__class__, username=username, source="auth_token")
            return True
        return False


def drop_expired_tokens(user) -> int:
    """Delete the user's expired tokens (each already refused with 401); returns how many."""
    return AuthToken.objects.filter(user=user, expiry__lt=timezone.now()).delete()[1].get(AuthToken._meta.label, 0)


class PortalTokenScheme(OpenApiAuthenticationExtension):
    target_class = "apps.teams.tokens.PortalTokenAuthentication"
    name = "portalToken"

    def get_security_definition(self, auto_schema):
        scheme = build_bearer_security_scheme_object(header_name="Authorization", token_prefix="Token")
        scheme["description"] = ("A personal token made on /account/tokens/: `Token gpp_…`. Read-only tokens "
                                 "get 403 on anything but GET; expired or revoked ones 401.")
        return scheme


def do_create_api_token(user, *, name: str, days: int, read_only: bool) -> tuple[ApiToken, str]:
    """Make a token for `user`; returns it and its key, which is shown this once and never stored."""
    name = (name or "").strip()
    if not name:
        raise TokenError("name: give the token a name (what script or person uses it)")
    if len(name) > NAME_MAX:
        raise TokenError(f"name: at most {NAME_MAX} characters")
    if days not in EXPIRY_DAYS:
        raise TokenError(f"expiry: one of {', '.join(map(str, EXPIRY_DAYS))} days")
    with transaction.atomic():
        token, key = AuthToken.objects.create(user, expiry=timedelta(days=days))
        info = ApiToken.objects.create(token=token, name=name, read_only=read_only)
        AuditEvent.objects.create(actor=user, action="token.create", target=f"{user.get_username()}: {name}",
                                  new_value={"name": name, "read_only": read_only,
                                             "expires": token.expiry.isoformat()})
    return info, key


def do_revoke_api_token(actor, info: ApiToken) -> None:
    """Revoke a token: its key stops working at once (401)."""
    with transaction.atomic():
        owner = info.token.user
        AuditEvent.objects.create(actor=actor, action="token.revoke", target=f"{owner.get_username()}: {info.name}",
                                  old_value={"name": info.name, "read_only": info.read_only})
        info.token.delete()            # cascades to the ApiToken row


def tokens_of(user):
    return ApiToken.objects.filter(token__user=user).select_related("token")
