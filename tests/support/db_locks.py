"""A table held locked by another database connection for as long as a test needs: the way the
suite makes a request wait in Postgres (a long read, a timed-out statement, an import caught
mid-write) without spending CPU on it, so a bound checked meanwhile does not depend on how
loaded the machine is."""
from __future__ import annotations

import threading
from contextlib import contextmanager

from django.db import connections


@contextmanager
def table_locked(table: str, mode: str = "ACCESS EXCLUSIVE", longest: float = 60.0):
    """`table` locked IN `mode` by a connection of its own, in a thread, from entering the `with`
    until leaving it (at most `longest` seconds); the lock is taken before the body runs."""
    locked, release = threading.Event(), threading.Event()

    def hold():
        other = connections.create_connection("default")
        try:
            with other.cursor() as cur:
                cur.execute("BEGIN")
                cur.execute(f"LOCK TABLE {table} IN {mode} MODE")
                locked.set()
                release.wait(longest)
                cur.execute("ROLLBACK")
        finally:
            other.close()
    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    try:
        assert locked.wait(10), f"{table} could not be locked within 10 s"
        yield
    finally:
        release.set()
        holder.join()
