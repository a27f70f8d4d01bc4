"""Single sign-on backend (docs/security.md, "Single sign-on"): who an OIDC sign-in is, and an
OIDC user's roles following the identity provider's group claim.

Loaded only when OIDC is configured (settings.OIDC_ENABLED). Team membership (which teams a
team lead sees) stays managed in the admin: the provider rarely knows our team names.

Who it is: the provider's `sub`, stored on first sign-in (apps.teams.models.SignInIdentity).
mozilla-django-oidc's default matches users by e-mail, which hands any existing account —
a superuser's included — to whoever the provider lets assert that address. Here:

1. a `sub` already stored signs in as its user;
2. otherwise the e-mail must be verified by the provider (`email_verified` true); an account
   with that address is linked only if it has no local password, is not a superuser and is
   not linked to another `sub`; any other match is refused (logged), never taken over;
3. no account with that address: a new one is made and linked.

Its requests to the provider (token, userinfo, JWKS) go through the portal's outbound session,
as Prometheus calls and webhooks do (docs/security.md, "Outbound requests"): the URL read as
the HTTP client reads it, the allow-list, the address contacted, and no redirect followed — a
3xx is an error naming its target, logged, and the sign-in fails back to the sign-in page.
mozilla-django-oidc itself calls `requests.get`/`post`, which follow redirects to any host.
"""
import logging

import jwt

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from django.utils.encoding import smart_str
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from requests.auth import HTTPBasicAuth

from apps.clusters.outbound import OutboundRefused, outbound_session

from apps.teams.access import ROLES
from apps.teams.models import SignInIdentity

log = logging.getLogger(__name__)


def roles_from_claims(claims, claim_name) -> set[str]:
    value = claims.get(claim_name) or []
    if isinstance(value, str):
        value = [value]
    return {str(v) for v in value} & set(ROLES)


def email_verified(claims) -> bool:
    value = claims.get("email_verified")
    return value is True or (isinstance(value, str) and value.lower() == "true")


class RoleMappingOIDCBackend(OIDCAuthenticationBackend):
    # ---- the provider's endpoints, through the outbound session (the library's requests
    # calls, the same arguments; `verify`, `timeout` and `proxies` from its settings).

    def _provider(self, method, url, **kwargs):
        with outbound_session() as session:
            return session.request(method, url, verify=self.get_settings("OIDC_VERIFY_SSL", True),
                                   timeout=self.get_settings("OIDC_TIMEOUT", None),
                                   proxies=self.get_settings("OIDC_PROXY", None), **kwargs)

    def authenticate(self, request, **kwargs):
        try:
            return super().authenticate(request, **kwargs)
        except OutboundRefused as exc:
            log.warning("single sign-on refused: %s", exc)
            return None

    def get_token(self, payload):
        auth = None
        if self.get_settings("OIDC_TOKEN_USE_BASIC_AUTH", False):
            auth = HTTPBasicAuth(payload.get("client_id"), payload.pop("client_secret", None))
        response = self._provider("POST", self.OIDC_OP_TOKEN_ENDPOINT, data=payload, auth=auth)
        self.raise_token_response_error(response)
        return response.json()

    def get_userinfo(self, access_token, id_token, payload):
        response = self._provider("GET", self.OIDC_OP_USER_ENDPOINT,
                                  headers={"Authorization": f"Bearer {access_token}"})
        response.raise_for_status()
        if response.headers.get("content-type", "").lower().startswith("application/jwt"):
            return self.verify_token(response.text)
        return response.json()

    def retrieve_matching_jwk(self, token):
        response = self._provider("GET", self.OIDC_OP_JWKS_ENDPOINT)
        response.raise_for_status()
        header = jwt.get_unverified_header(token)
        key = None
        for jwk in response.json()["keys"]:
            if import_from_settings("OIDC_VERIFY_KID", True) and jwk["kid"] != smart_str(header["kid"]):
                continue
            if "alg" in jwk and jwk["alg"] != smart_str(header["alg"]):
                continue
            key = jwk
        if key is None:
            raise SuspiciousOperation("Could not find a valid JWKS.")
        return jwt.PyJWK(key)

    # ---- who it is

    def verify_claims(self, claims):
        return bool(claims.get("sub")) and super().verify_claims(claims)

    def filter_users_by_claims(self, claims):
        subject = str(claims["sub"])
        linked = self.UserModel.objects.filter(sign_in_identity__subject=subject)
        if linked:
            return list(linked)
        if not email_verified(claims):
            raise SuspiciousOperation(f"sub {subject!r} is not linked and the provider does not say its e-mail "
                                      "is verified (email_verified): refusing to match or create an account by it")
        matches = list(self.UserModel.objects.filter(email__iexact=claims.get("email") or ""))
        refused = [u for u in matches if u.is_superuser or u.has_usable_password()
                   or SignInIdentity.objects.filter(user=u).exists()]
        if refused:
            raise SuspiciousOperation(f"sub {subject!r}: the e-mail belongs to an account that single sign-on may not "
                                      "take over (a superuser, a local password, or linked to another sub); an admin "
                                      "can link it by hand (docs/security.md)")
        return matches

    def create_user(self, claims):
        with transaction.atomic():
            user = super().create_user(claims)
            SignInIdentity.objects.create(user=user, subject=str(claims["sub"]))
        self._sync_roles(user, claims)
        return user

    def update_user(self, user, claims):
        SignInIdentity.objects.get_or_create(user=user, defaults={"subject": str(claims["sub"])})
        self._sync_roles(user, claims)
        return user

    def _sync_roles(self, user, claims):
        wanted = roles_from_claims(claims, getattr(settings, "OIDC_ROLES_CLAIM", "groups"))
        user.groups.remove(*user.groups.filter(name__in=ROLES).exclude(name__in=wanted))
        user.groups.add(*Group.objects.filter(name__in=wanted))
