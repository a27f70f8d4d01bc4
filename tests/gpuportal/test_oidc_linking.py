"""Single sign-on matches accounts on the provider's stored `sub`, never on an e-mail the
provider may let its users choose (docs/security.md, "Single sign-on"). mozilla-django-oidc's
default linked by e-mail alone and kept `is_superuser`: a provider user who asserted the
admin's address signed in as that superuser.

The provider's answer (the userinfo claims) is given directly; everything after it — matching,
linking, creating, roles — is the portal's backend against the test database."""
import pytest
from django.contrib.auth.models import Group, User

from apps.teams.models import SignInIdentity

pytestmark = pytest.mark.django_db


@pytest.fixture
def backend(settings):
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = "portal", "s3cret"
    settings.OIDC_OP_TOKEN_ENDPOINT = "http://127.0.0.1:9/token"
    settings.OIDC_OP_USER_ENDPOINT = "http://127.0.0.1:9/user"
    settings.OIDC_OP_JWKS_ENDPOINT = "http://127.0.0.1:9/jwks"
    settings.OIDC_RP_SIGN_ALGO = "RS256"
    settings.OIDC_RP_SCOPES = "openid email profile"
    settings.OIDC_ROLES_CLAIM = "groups"
    from gpuportal.oidc import RoleMappingOIDCBackend

    def sign_in(**claims):
        b = RoleMappingOIDCBackend()
        b.get_userinfo = lambda access_token, id_token, payload: claims   # the provider's answer
        try:
            return b.get_or_create_user("access", "id", {})
        except Exception as exc:    # authenticate() turns SuspiciousOperation into "no user"
            from django.core.exceptions import SuspiciousOperation
            if isinstance(exc, SuspiciousOperation):
                return None
            raise
    return sign_in


def test_an_asserted_admin_address_does_not_sign_in_as_the_superuser(backend):
    root = User.objects.create_superuser("root", email="admin@example.com", password="root-correct-horse")
    assert backend(sub="mallory-1", email="admin@example.com", email_verified=True) is None
    assert backend(sub="mallory-1", email="Admin@Example.com", email_verified=False) is None
    assert not SignInIdentity.objects.exists() and User.objects.count() == 1
    root.refresh_from_db()
    assert root.is_superuser


def test_an_account_with_a_local_password_is_not_taken_over(backend):
    User.objects.create_user("finance", email="finance@example.com", password="finance-correct-horse")
    assert backend(sub="x-1", email="finance@example.com", email_verified=True) is None
    assert not SignInIdentity.objects.exists()


def test_an_unverified_address_neither_links_nor_creates(backend):
    sso_user = User.objects.create_user("sso-user", email="lead@example.com")        # no password
    assert backend(sub="x-1", email="lead@example.com") is None                         # claim missing
    assert backend(sub="x-1", email="new@example.com", email_verified=False) is None
    assert User.objects.count() == 1 and not SignInIdentity.objects.exists()
    assert not sso_user.groups.exists()


def test_first_sign_in_creates_and_links_then_the_sub_is_what_matches(backend):
    Group.objects.get_or_create(name="finance")
    user = backend(sub="alice-1", email="alice@example.com", email_verified=True, groups=["finance"])
    assert user is not None and not user.is_superuser and not user.has_usable_password()
    assert SignInIdentity.objects.get(subject="alice-1").user == user
    assert list(user.groups.values_list("name", flat=True)) == ["finance"]
    # the provider changes alice's address, or someone else now holds her old one
    assert backend(sub="alice-1", email="alice.new@example.com", email_verified=False) == user
    assert backend(sub="bob-1", email="alice@example.com", email_verified=True) is None   # alice's is linked
    assert User.objects.count() == 1


def test_an_account_made_by_sign_in_before_the_sub_was_stored_is_linked_once(backend):
    """Upgrading: accounts single sign-on made before (no password, not superuser) keep their teams."""
    old = User.objects.create_user("b64hash", email="lead@example.com")
    assert backend(sub="lead-1", email="lead@example.com", email_verified="true") == old
    assert SignInIdentity.objects.get(user=old).subject == "lead-1"
    assert backend(sub="other-2", email="lead@example.com", email_verified=True) is None


def test_a_superuser_linked_by_an_admin_signs_in_by_sub(backend):
    root = User.objects.create_superuser("root", email="admin@example.com", password="root-correct-horse")
    SignInIdentity.objects.create(user=root, subject="root-sub")
    assert backend(sub="root-sub", email="whatever@example.com", email_verified=False) == root
