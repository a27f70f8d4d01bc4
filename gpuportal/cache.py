"""The cache, failing open when Redis is away (docs/security.md, "Redis away").

Everything the portal keeps in the cache can be done without: the API's throttling counts
(DRF reads them on every call) and marks such as ingest's "already queued". Django's Redis cache
raises on every call while Redis is down, which made every API call a 500. This one answers as
an empty cache instead — a read finds nothing (so throttling lets the call through), a write
stores nothing, `add` reports the key as present (so "only once" marks skip their work rather
than repeat it) — and says so: one log line a minute per process and
`gpuportal_dependency_errors_total{dependency="cache"}` on /metrics for every failed call.
"""
from __future__ import annotations

import functools
import logging
import time

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

from apps.web.dependencies import dependency_failed

log = logging.getLogger(__name__)
LOG_EVERY_SECONDS = 60.0
_last_logged = [0.0]


def _failed(operation: str, exc: Exception) -> None:
    dependency_failed("cache")
    now = time.monotonic()
    if now - _last_logged[0] >= LOG_EVERY_SECONDS:
        _last_logged[0] = now
        log.warning("cache (Redis) unavailable, answering as an empty cache: %s failed: %s", operation, exc)


def _fail_open(answer):
    def wrap(method):
        @functools.wraps(method)
        def call(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except RedisError as exc:
                _failed(method.__name__, exc)
                return answer(*args, **kwargs) if callable(answer) else answer
        return call
    return wrap


class FailOpenRedisCache(RedisCache):
    @_fail_open(lambda key, default=None, version=None: default)
    def get(self, key, default=None, version=None):
        return super().get(key, default, version)

    @_fail_open({})
    def get_many(self, keys, version=None):
        return super().get_many(keys, version)

    @_fail_open(False)
    def has_key(self, key, version=None):
        return super().has_key(key, version)

    @_fail_open(False)
    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return super().add(key, value, timeout, version)

    @_fail_open(None)
    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return super().set(key, value, timeout, version)

    @_fail_open(lambda data, *args, **kwargs: list(data))
    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        return super().set_many(data, timeout, version)

    @_fail_open(False)
    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        return super().touch(key, timeout, version)

    @_fail_open(False)
    def delete(self, key, version=None):
        return super().delete(key, version)

    @_fail_open(None)
    def delete_many(self, keys, version=None):
        return super().delete_many(keys, version)

    @_fail_open(False)
    def clear(self):
        return super().clear()
