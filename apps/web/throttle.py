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
from contextlib import contextmanager
from functools import wraps

from django.conf import settings
from django.shortcuts import render
from rest_framework.exceptions import Throttled
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


# ---------------------------------------------------------------- long reads, a few at a time

LONG_READ_WAIT_SECONDS = 10     # what a refused long read is told to wait


def long_read_refusal() -> str:
    limit = settings.LONG_READS_PER_USER
    return (f"you already have {limit} long read{'s' if limit != 1 else ''} (idle GPUs, right-sizing) running; "
            f"wait for one to finish (LONG_READS_PER_USER).")


@contextmanager
def long_read_slot(request):
    """Yields whether the user may start one more read of hourly rows per pod now: at most
    `LONG_READS_PER_USER` at once per user, counted in the cache (docs/security.md, "No request
    ties up the portal"). A cache that cannot be reached lets the read through, as the rate
    throttles do. The count's key expires after the longest a request may run, so a worker
    killed mid-read frees its slot."""
    user = getattr(request, "user", None)
    limit = settings.LONG_READS_PER_USER
    if not limit or user is None or not user.is_authenticated:
        yield True
        return
    from django.core.cache import cache
    key = f"long-reads:{user.pk}"
    try:
        cache.add(key, 0, timeout=int(settings.STATEMENT_TIMEOUT_EXPORT_SECONDS) + 60)
        running = cache.incr(key)
    except (ValueError, *CACHE_ERRORS) as exc:
        log.warning("long-read limit not applied: its cache is unreachable (%s: %s)", type(exc).__name__, exc)
        yield True
        return
    try:
        yield running <= limit
    finally:
        try:
            cache.decr(key)
        except (ValueError, *CACHE_ERRORS):
            pass


def long_read_page(view):
    """A page that reads hourly rows per pod: over the user's LONG_READS_PER_USER, a 429 page."""
    @wraps(view)
    def inner(request, *args, **kwargs):
        with long_read_slot(request) as allowed:
            if not allowed:
                response = render(request, "429.html", {"wait": LONG_READ_WAIT_SECONDS,
                                                        "reason": long_read_refusal().rstrip(".")},
                                  status=429)
                response["Retry-After"] = str(LONG_READ_WAIT_SECONDS)
                return response
            return view(request, *args, **kwargs)
    return inner


def long_read_api(method):
    """The same for an API view's handler: a 429 with the reason (DRF's `Throttled`)."""
    @wraps(method)
    def inner(self, request, *args, **kwargs):
        with long_read_slot(request) as allowed:
            if not allowed:
                raise Throttled(wait=LONG_READ_WAIT_SECONDS, detail=long_read_refusal())
            return method(self, request, *args, **kwargs)
    return inner
