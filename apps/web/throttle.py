"""Request throttling for the API and the pages alike (docs/security.md, "Throttling").

Both count requests per user (or per address for anonymous ones) in Django's cache — Redis in
production — with DRF's `UserRateThrottle`: the API under the scope `user`
(`DEFAULT_THROTTLE_RATES["user"]`, from `API_THROTTLE_RATE`), the pages under `page` (its own
rate when one is set, `PAGE_THROTTLE_RATE`, else the API's). A request over the rate is 429
with `Retry-After`.

A throttle that cannot reach its cache lets the request through and logs one line: a Redis
outage must not turn every page into a 500, and the pages themselves do not need Redis.
"""
from __future__ import annotations

import logging
import math
from functools import wraps

from django.conf import settings
from django.shortcuts import render
from rest_framework.throttling import UserRateThrottle

try:
    from redis.exceptions import RedisError
except ImportError:     # no Redis client installed: only the local cache, which does not fail
    RedisError = OSError

log = logging.getLogger(__name__)
CACHE_ERRORS = (RedisError, OSError)


class FailOpen:
    """Mixed into a DRF throttle: an unreachable cache lets the request through, logged."""

    def allow_request(self, request, view):
        try:
            return super().allow_request(request, view)
        except CACHE_ERRORS as exc:
            log.warning("throttle %r not applied: its cache is unreachable (%s: %s)", self.scope,
                        type(exc).__name__, exc)
            return True


class FailOpenUserRateThrottle(FailOpen, UserRateThrottle):
    """The API's per-user throttle, failing open (docs/security.md, "Throttling")."""


class PageRateThrottle(FailOpen, UserRateThrottle):
    """The pages' per-user throttle: its own count, at PAGE_THROTTLE_RATE or the API's rate."""
    scope = "page"

    def get_rate(self):
        return getattr(settings, "PAGE_THROTTLE_RATE", None) or self.THROTTLE_RATES.get("page") \
            or self.THROTTLE_RATES.get("user")


def throttled_page(view):
    """A page view counted against the signed-in user's page rate; over it, a 429 page saying
    when to come back (with `Retry-After`)."""
    @wraps(view)
    def inner(request, *args, **kwargs):
        throttle = PageRateThrottle()
        if throttle.rate is not None and not throttle.allow_request(request, None):
            wait = max(1, math.ceil(throttle.wait() or 1))
            response = render(request, "429.html", {"wait": wait}, status=429)
            response["Retry-After"] = str(wait)
            return response
        return view(request, *args, **kwargs)
    return inner
