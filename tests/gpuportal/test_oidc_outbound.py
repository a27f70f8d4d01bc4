"""Single sign-on's own requests (the token, userinfo and JWKS endpoints) leave the portal as
Prometheus calls and webhooks do: through the outbound session, so a redirect is an error naming
its target, never followed, and the allow-list and address rules apply (docs/security.md,
"Outbound requests"). mozilla-django-oidc calls `requests.get`/`post`, which follow a 307 from
the provider to any host with the client secret, the code or the access token.

Real HTTP servers on loopback addresses: the provider on localhost, "another host" on
127.0.0.2."""
import json
import logging
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from django.test import RequestFactory

from apps.clusters.outbound import OutboundRefused
from tests.support.fake_http import answering

pytestmark = pytest.mark.django_db


@contextmanager
def other_host():
    seen = []

    def answer(request):
        seen.append((request.command, request.path, request.headers.get("Authorization")))
        return 200, json.dumps({"access_token": "a", "id_token": "i", "keys": []}), "application/json"
    with answering(answer, host="127.0.0.2") as url:
        yield SimpleNamespace(url=url, seen=seen)


@contextmanager
def provider_redirecting_to(target_url):
    seen = []

    def answer(request):
        seen.append((request.command, request.path))
        return 307, "", "text/plain", {"Location": target_url + request.path}
    with answering(answer) as url:
        yield SimpleNamespace(url=url.replace("127.0.0.1", "localhost"), seen=seen)


@pytest.fixture
def backend_for(settings):
    def make(base):
        settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = "portal", "client-s3cret"
        settings.OIDC_OP_AUTHORIZATION_ENDPOINT = base + "/authorize"
        settings.OIDC_OP_TOKEN_ENDPOINT = base + "/token"
        settings.OIDC_OP_USER_ENDPOINT = base + "/userinfo"
        settings.OIDC_OP_JWKS_ENDPOINT = base + "/jwks"
        settings.OIDC_RP_SIGN_ALGO = "RS256"
        from gpuportal.oidc import RoleMappingOIDCBackend
        return RoleMappingOIDCBackend()
    return make


@pytest.mark.parametrize("allowed", [["localhost"], []])
def test_a_redirect_from_any_provider_endpoint_is_an_error_naming_its_target(settings, backend_for, allowed):
    settings.OUTBOUND_ALLOWED_HOSTS = allowed
    with other_host() as target, provider_redirecting_to(target.url) as provider:
        backend = backend_for(provider.url)
        with pytest.raises(OutboundRefused, match=f"a redirect to '{target.url}/token'"):
            backend.get_token({"client_id": "portal", "client_secret": "client-s3cret", "code": "c"})
        with pytest.raises(OutboundRefused, match=f"a redirect to '{target.url}/userinfo'"):
            backend.get_userinfo("access-token", "id", {})
        with pytest.raises(OutboundRefused, match=f"a redirect to '{target.url}/jwks'"):
            backend.retrieve_matching_jwk("header.payload.signature")
        assert provider.seen == [("POST", "/token"), ("GET", "/userinfo"), ("GET", "/jwks")]
        assert target.seen == []


def test_the_sign_in_callback_fails_cleanly_and_logs_the_target(settings, backend_for, caplog):
    """The callback's authenticate() answers "no user" (the view sends the browser back to the
    sign-in page), and the log names where the provider tried to send the code."""
    settings.OUTBOUND_ALLOWED_HOSTS = []
    settings.OIDC_AUTHENTICATION_CALLBACK_URL = "login"     # any named URL: the OIDC routes load at start
    with other_host() as target, provider_redirecting_to(target.url) as provider:
        backend = backend_for(provider.url)
        request = RequestFactory().get("/oidc/callback/", {"code": "the-code", "state": "s"})
        with caplog.at_level(logging.WARNING, logger="gpuportal.oidc"):
            assert backend.authenticate(request, nonce="n") is None
        assert target.seen == []
    assert any(f"a redirect to '{target.url}/token'" in r.getMessage() for r in caplog.records)


def test_provider_endpoints_follow_the_allow_list_and_address_rules(settings, backend_for):
    with other_host() as elsewhere:
        settings.OUTBOUND_ALLOWED_HOSTS = [".example.com"]
        backend = backend_for(elsewhere.url)
        with pytest.raises(OutboundRefused, match="127.0.0.2 is not in OUTBOUND_ALLOWED_HOSTS"):
            backend.get_token({"code": "c"})
        settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.2"]          # named exactly: contacted
        assert backend.get_token({"code": "c"})["access_token"] == "a"
        assert elsewhere.seen == [("POST", "/token", None)]
