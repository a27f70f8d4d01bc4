"""Who may write which days of a cluster: Redis locks across machines, process locks without Redis."""
from __future__ import annotations

import contextlib
import threading

from django.conf import settings

from .errors import IngestBusy

_local_locks: dict[str, threading.Lock] = {}
_local_guard = threading.Lock()


LOCK_PREFIX = "gpuportal:ingest-lock"


def _lock_names(cluster_id: int, days) -> list[str]:
    if days is None:
        return [f"{LOCK_PREFIX}:{cluster_id}"]
    return [f"{LOCK_PREFIX}:{cluster_id}:{d.isoformat()}" for d in sorted(days)]


class HeldLocks:
    """The locks a run holds; `renew()` after each chunk keeps them while the run lives."""

    def __init__(self, redis_locks=()):
        self.redis_locks = list(redis_locks)

    def renew(self):
        if not self.redis_locks:
            return
        import redis

        try:
            for lock in self.redis_locks:
                lock.reacquire()
        except redis.exceptions.LockNotOwnedError:
            raise IngestBusy("the ingest lock expired while this run was working; another run may "
                             "have started, so this one stops without writing") from None


@contextlib.contextmanager
def cluster_lock(cluster_id: int, timeout_seconds: int | None = None, days=None):
    """At most one writer per (cluster, billing day) at a time: Redis locks, or process locks without Redis.

    `days=None` takes the whole cluster (no day of it may be written meanwhile); with `days`,
    only those days are taken, after checking nobody holds the whole cluster: ingests of
    different days of one cluster run side by side on several workers. Redis locks lapse
    `INGEST_LOCK_SECONDS` after the holder's last renewal (once per chunk), so a worker killed
    mid-run does not hold its days for long.
    """
    timeout_seconds = timeout_seconds or settings.INGEST_LOCK_SECONDS
    names = _lock_names(cluster_id, days)
    busy = IngestBusy(f"another ingest of cluster {cluster_id} is running; try again when it ends")
    if settings.REDIS_URL:
        import redis

        conn = redis.Redis.from_url(settings.REDIS_URL)
        if days is None:
            held = any(True for _ in conn.scan_iter(match=f"{LOCK_PREFIX}:{cluster_id}:*", count=1000))
        else:
            held = bool(conn.exists(f"{LOCK_PREFIX}:{cluster_id}"))
        if held:
            raise busy
        taken = []
        try:
            for name in names:
                lock = conn.lock(name, timeout=timeout_seconds, blocking=False)
                if not lock.acquire(blocking=False):
                    raise busy
                taken.append(lock)
            yield HeldLocks(taken)
        finally:
            for lock in taken:
                with contextlib.suppress(redis.exceptions.LockError):
                    lock.release()
        return
    with _local_guard:
        if days is None:
            held = any(n.startswith(f"{LOCK_PREFIX}:{cluster_id}:") and lk.locked() for n, lk in _local_locks.items())
        else:
            whole = _local_locks.get(f"{LOCK_PREFIX}:{cluster_id}")
            held = whole is not None and whole.locked()
        if held:
            raise busy
        locks = [_local_locks.setdefault(n, threading.Lock()) for n in names]
    taken = []
    try:
        for lock in locks:
            if not lock.acquire(blocking=False):
                raise busy
            taken.append(lock)
        yield HeldLocks()
    finally:
        for lock in taken:
            lock.release()
