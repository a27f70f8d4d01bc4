"""Where the portal may send requests of its own (docs/security.md, "Outbound requests").

Cluster Prometheus URLs and alert webhook URLs are typed by admins; unchecked, they let the
portal be pointed at any address it can reach (a cloud metadata service, an internal admin
page). Single sign-on's requests to the identity provider (`gpuportal/oidc.py`) go the same
way. Three rules, one home:

- *The URL as the client reads it* (`outbound_problem`): http or https only; no backslash,
  space or control character (urllib3 ends the host at a backslash where `urlsplit` reads on to
  an `@`); no user name or password (credentials go in the cluster's sealed fields); an IP
  address written as four decimal numbers; and the host urllib3 will contact must be the host
  `urlsplit` names. Checked when a URL is saved and again before each request.
- *The allow-list* (`OUTBOUND_ALLOWED_HOSTS`, empty: any host): `prometheus` or
  `thanos.example.com` exactly, `.example.com` for that domain and every name under it,
  `10.0.0.5` or `10.96.0.0/12` for addresses.
- *The address really contacted* (`address_problem`, checked on the connected socket, before
  a byte is sent): never link-local, unspecified or multicast (169.254.169.254 is a cloud's
  metadata service) unless a network entry names it; with an allow-list, a loopback, private
  or otherwise non-public address only for a host named exactly or an address inside a
  network entry.

And no redirect is followed (`outbound_session`): a 3xx is an error naming its target.
Whatever the host, a failed request is recorded as its HTTP status only: the reply's text goes
to the log, never to a page.
"""
from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

SCHEMES = ("http", "https")
_UNSAFE_CHARACTERS = re.compile(r"[\\\s\x00-\x1f\x7f]")
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+))*\.?$", re.IGNORECASE)


class OutboundRefused(Exception):
    """A request the outbound rules refuse: a URL, an address or a redirect. Not an OSError, so
    urllib3 neither retries it nor rewords it; the callers turn it into their own one-line error."""


@dataclass(frozen=True)
class AllowList:
    names: frozenset[str]
    suffixes: tuple[str, ...]
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]

    @property
    def empty(self) -> bool:
        return not (self.names or self.suffixes or self.networks)

    def names_host(self, host: str) -> bool:
        return host in self.names or any(host.endswith(suffix) or host == suffix[1:] for suffix in self.suffixes)

    def holds_address(self, address) -> bool:
        return any(address.version == network.version and address in network for network in self.networks)


def allow_list() -> AllowList:
    names, suffixes, networks = set(), [], []
    for entry in (e.strip().lower().rstrip(".") for e in settings.OUTBOUND_ALLOWED_HOSTS):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
        except ValueError:
            if entry.startswith("."):
                suffixes.append(entry)
            else:
                names.add(entry)
    return AllowList(frozenset(names), tuple(suffixes), tuple(networks))


def _ip_literal(host: str):
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None
    return getattr(address, "ipv4_mapped", None) or address


def redacted(url: str) -> str:
    """`url` with any user name and password replaced by `***`, for messages and lists."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority_end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority = rest[:authority_end]
    if "@" in authority:
        authority = "***@" + authority.rsplit("@", 1)[1]
    return f"{scheme}{sep}{authority}{rest[authority_end:]}"


def host_allowed(host: str) -> bool:
    """Whether the allow-list admits `host` (a name or an IP literal) by its spelling."""
    rules = allow_list()
    if rules.empty:
        return True
    host = host.lower().rstrip(".").strip("[]")
    if (address := _ip_literal(host)) is not None:
        return rules.holds_address(address) or host in rules.names
    return rules.names_host(host)


def outbound_host(url: str) -> str:
    """The host the HTTP client (urllib3, under requests) will contact for `url`, after every
    rule on the URL's spelling and the allow-list; raises OutboundRefused with the reason."""
    host = _spelled_host(url)
    if not host_allowed(host):
        raise OutboundRefused(f"the host {host} is not in OUTBOUND_ALLOWED_HOSTS")
    if (address := _ip_literal(host)) is not None and (problem := _never_contacted(address, allow_list())):
        raise OutboundRefused(f"the host {host} is {problem}")
    return host


def spelling_problem(url: str) -> str:
    """Why `url` would be read otherwise by the HTTP client than by `urlsplit` (or carries
    credentials, or is not http(s)), or "": the rules that need no settings, which
    gpuportal/settings/ also applies to the single sign-on endpoints."""
    try:
        _spelled_host(url)
    except OutboundRefused as exc:
        return str(exc)
    return ""


def _spelled_host(url: str) -> str:
    if not isinstance(url, str) or not url:
        raise OutboundRefused("no URL")
    shown = redacted(url)
    if bad := _UNSAFE_CHARACTERS.search(url):
        what = "a backslash" if bad.group() == "\\" else "a space or control character"
        raise OutboundRefused(f"{shown!r} contains {what}; write the URL without it")
    try:
        parsed = parse_url(url)
        split = urlsplit(url)
        split.port  # noqa: B018 — raises ValueError for a port out of range
    except (LocationParseError, ValueError):
        raise OutboundRefused(f"{shown!r} is not a URL") from None
    if (parsed.scheme or "").lower() not in SCHEMES or split.scheme.lower() not in SCHEMES:
        raise OutboundRefused(f"{shown!r} is not an http or https URL")
    if parsed.auth is not None or "@" in split.netloc:
        raise OutboundRefused(
            f"{shown!r} carries a user name or password; give credentials in the cluster's credential "
            "fields (bearer token or basic auth, stored sealed) and remove them from the URL")
    host = (parsed.host or "").lower().strip("[]")
    if not host or host.rstrip(".") != (split.hostname or "").lower().rstrip("."):
        raise OutboundRefused(f"{shown!r} names its host ambiguously; write it as scheme://host[:port]/path")
    if _ip_literal(host) is None and _NUMERIC_HOST.match(host):
        raise OutboundRefused(f"{shown!r}: write an IP address as four decimal numbers (like 10.0.0.5)")
    return host


def outbound_problem(url: str) -> str:
    """Why the portal may not send a request to `url`, or "" when it may (its spelling and the
    allow-list; the address is checked when the request connects)."""
    try:
        outbound_host(url)
    except OutboundRefused as exc:
        return str(exc)
    return ""


def _never_contacted(address, rules: AllowList) -> str:
    if rules.holds_address(address):
        return ""
    if address.is_link_local or address.is_unspecified or address.is_multicast:
        return f"a link-local, unspecified or multicast address ({address}), never contacted"
    return ""


def address_problem(host: str, peer: str) -> str:
    """Why the portal may not talk to `peer` (the address a connection to `host` reached), or ""."""
    address = _ip_literal(peer)
    if address is None:
        return f"{host} connected to {peer!r}, which is not an IP address"
    rules = allow_list()
    if problem := _never_contacted(address, rules):
        return f"{host} resolves to {problem}"
    if rules.empty or rules.holds_address(address) or address.is_global:
        return ""
    if host.lower().rstrip(".").strip("[]") in rules.names:
        return ""      # the deployer named this very host: its in-cluster address is meant
    return (f"{host} resolves to {address}, a loopback, private or other non-public address; add the host "
            "exactly, or the address or its network, to OUTBOUND_ALLOWED_HOSTS to allow it")


class _CheckedConnection(HTTPConnection):
    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        try:
            peer = sock.getpeername()[0]
        except OSError:
            peer = ""
        if problem := address_problem(self.host, peer):
            sock.close()
            raise OutboundRefused(problem)
        return sock


class _CheckedTLSConnection(_CheckedConnection, HTTPSConnection):
    pass


class _CheckedPool(HTTPConnectionPool):
    ConnectionCls = _CheckedConnection


class _CheckedTLSPool(HTTPSConnectionPool):
    ConnectionCls = _CheckedTLSConnection


class CheckedAdapter(HTTPAdapter):
    """requests' adapter whose connections check the address they reached (`address_problem`)."""

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _CheckedPool, "https": _CheckedTLSPool}

    def send(self, request, *args, **kwargs):
        outbound_host(request.url)      # the URL as sent, after every library touched it
        return super().send(request, *args, **kwargs)


class OutboundSession(requests.Session):
    """The session every request the portal makes of its own goes through (Prometheus, webhooks,
    single sign-on's token, userinfo and JWKS endpoints):
    checked adapters on every mount, no redirect followed, no proxy or .netrc credentials taken
    from the environment (docs/security.md, "Outbound requests")."""

    def __init__(self):
        super().__init__()
        self.trust_env = False

    def mount(self, prefix, adapter):
        if not isinstance(adapter, CheckedAdapter):     # prometheus-api-client mounts its own
            adapter = CheckedAdapter(max_retries=adapter.max_retries)
        super().mount(prefix, adapter)

    def send(self, request, **kwargs):
        kwargs["allow_redirects"] = False
        response = super().send(request, **kwargs)
        if response.is_redirect:
            target = response.headers.get("location", "")[:300]
            response.close()
            raise OutboundRefused(
                f"{_origin(request.url)} answered HTTP {response.status_code}, a redirect to {target!r}; "
                "the portal follows no redirect: give the final URL")
        return response


def _origin(url: str) -> str:
    split = urlsplit(redacted(url))
    return f"{split.scheme}://{split.netloc}"


def outbound_session() -> OutboundSession:
    return OutboundSession()
