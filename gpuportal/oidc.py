"""Single sign-on backend: an OIDC user's roles follow the identity provider's group claim.

Loaded only when OIDC is configured (settings.OIDC_ENABLED). Team membership (which teams a
team lead sees) stays managed in the admin: the provider rarely knows our team names.
"""
from django.conf import settings
from django.contrib.auth.models import Group
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from apps.teams.access import ROLES


def roles_from_claims(claims, claim_name) -> set[str]:
    value = claims.get(claim_name) or []
    if isinstance(value, str):
        value = [value]
    return {str(v) for v in value} & set(ROLES)


class RoleMappingOIDCBackend(OIDCAuthenticationBackend):
    def create_user(self, claims):
        user = super().create_user(claims)
        self._sync_roles(user, claims)
        return user

    def update_user(self, user, claims):
        self._sync_roles(user, claims)
        return user

    def _sync_roles(self, user, claims):
        wanted = roles_from_claims(claims, getattr(settings, "OIDC_ROLES_CLAIM", "groups"))
        user.groups.remove(*user.groups.filter(name__in=ROLES).exclude(name__in=wanted))
        user.groups.add(*Group.objects.filter(name__in=wanted))
