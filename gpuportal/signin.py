"""Sign-in throttling (django-axes) keyed on the right client (docs/security.md, "Sign-in resists
guessing").

*Which client.* Behind `TRUSTED_PROXY_COUNT` = N proxies, each proxy appends the address it saw
to `X-Forwarded-For`, so the last N entries are written by proxies we trust and the client's
address is entry −N: whatever a client put in the header itself sits further left and is
never read. An ingress that replaces the header with the one address it saw gives a one-entry
header whose entry −1 is that address, the same answer. With fewer than N entries (a request
that did not pass every proxy, e.g. straight to the pod) or an entry that is not an IP address,
the connection's own address (`REMOTE_ADDR`) counts. There is always an address: never a
shared "unknown" bucket that one client could fill for everybody.

*What is locked.* Failures count per user name *and* address together (`SIGNIN_FAILURE_LIMIT`,
5), so guessing finance's password from one address locks finance out of that address only,
and finance still signs in from their own; and per address across every user name
(`SIGNIN_ADDRESS_FAILURE_LIMIT`, 20), so one address cannot try five guesses at each of many
names. A success clears that user name's failures from that address only.
"""
from __future__ import annotations

import ipaddress

from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.db.models import Sum


def client_address(request) -> str:
    remote = request.META.get("REMOTE_ADDR") or ""
    count = settings.TRUSTED_PROXY_COUNT
    if not count:
        return remote
    entries = [e.strip() for e in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if e.strip()]
    if len(entries) < count:
        return remote
    candidate = entries[-count]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote


class SigninHandler(AxesDatabaseHandler):
    """axes' database handler with two limits: one per (user name, address), one per address, read
    in the order settings.AXES_LOCKOUT_PARAMETERS lists them."""

    def get_failures(self, request, credentials=None) -> int:
        pair, address = (q.aggregate(n=Sum("failures_since_start"))["n"] or 0
                         for q in self.get_user_attempts(request, credentials))
        if address >= settings.SIGNIN_ADDRESS_FAILURE_LIMIT:
            return max(pair, settings.AXES_FAILURE_LIMIT)   # the address is locked for every name
        return pair

    def reset_user_attempts(self, request, credentials=None) -> int:
        """A success forgives this user name's failures from this address, not other names'."""
        pair = self.filter_user_attempts(request, credentials)[0]
        count, _ = pair.delete()
        return count
