"""Redis for tests that start real Celery workers: each test run's keys carry a prefix of its own
(REDIS_KEY_PREFIX: the broker's and the cache's, such as ingest's "already queued" marks), so two
runs on one machine sharing a Redis database never take each other's tasks or marks, and cleaning
up deletes every key of this run and no other."""
import os
from contextlib import contextmanager

import pytest
import redis
from django.db import connection


def key_prefix() -> str:
    return f"test-{connection.settings_dict['NAME']}-{os.getpid()}:"


def drop(conn) -> None:
    for key in conn.scan_iter(match=key_prefix() + "*"):
        conn.delete(key)


@contextmanager
def own_keys(url: str):
    """A connection to the Redis at `url`, this run's keys deleted before and after."""
    conn = redis.Redis.from_url(url)
    try:
        conn.ping()
    except redis.exceptions.ConnectionError:
        pytest.fail(f"Redis is not running at {url}")
    drop(conn)
    yield conn
    drop(conn)
