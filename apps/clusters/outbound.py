"""Where the portal may send requests of its own (docs/security.md, "Outbound requests").

Cluster Prometheus URLs and alert webhook URLs are typed by admins; unchecked, they let the
portal be pointed at any address it can reach (a cloud metadata service, an internal admin
page). `OUTBOUND_ALLOWED_HOSTS` (empty: any host) lists the hosts allowed: `prometheus` or
`thanos.example.com` exactly, `.example.com` for that domain and every name under it. Checked
when a URL is saved and again before each request. Whatever the host, a failed request is
recorded as its HTTP status only: the reply's text goes to the log, never to a page.
"""
from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings


def host_allowed(host: str) -> bool:
    allowed = settings.OUTBOUND_ALLOWED_HOSTS
    if not allowed:
        return True
    host = host.lower().rstrip(".")
    for pattern in (p.strip().lower().rstrip(".") for p in allowed if p.strip()):
        if host == pattern.lstrip(".") or (pattern.startswith(".") and host.endswith(pattern)):
            return True
    return False


def outbound_problem(url: str) -> str:
    """Why the portal may not send a request to `url`, or "" when it may."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return f"{url!r} is not a URL"
    if host_allowed(host):
        return ""
    return f"the host {host or '(none)'} is not in OUTBOUND_ALLOWED_HOSTS"
