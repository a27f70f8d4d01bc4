"""Redis for tests that start real Celery workers: each test run's broker keys carry a prefix of
its own (CELERY_KEY_PREFIX, kombu's global_keyprefix), so two runs on one machine sharing a Redis
database never take each other's tasks, and cleaning up deletes only this run's keys."""
import os

import redis
from django.db import connection


def key_prefix() -> str:
    return f"test-{connection.settings_dict['NAME']}-{os.getpid()}:"


def clean(url: str):
    """A connection to `url` with this run's keys deleted, before and (by the caller) after."""
    conn = redis.Redis.from_url(url)
    drop(conn)
    return conn


def drop(conn) -> None:
    for key in conn.scan_iter(match=key_prefix() + "*"):
        conn.delete(key)
