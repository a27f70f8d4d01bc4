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
"""
import logging

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

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
