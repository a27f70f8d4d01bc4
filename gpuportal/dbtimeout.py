"""Postgres `statement_timeout` per kind of work (docs/security.md, "No request ties up the
portal"): no single statement of a request may hold a web worker and a database connection for
longer than its kind allows.

- pages and API reads: `STATEMENT_TIMEOUT_SECONDS` (default 30);
- exports (`?format=csv|xlsx`, the statement workbook, FOCUS) and writes (a close, a rate
  upload, any POST): `STATEMENT_TIMEOUT_EXPORT_SECONDS` (default 300);
- Celery workers: `STATEMENT_TIMEOUT_WORKER_SECONDS` (default 1800), on each connection a
  worker process opens. Management commands keep the server's own setting.

0 leaves the server's setting. A statement cut short answers 503 naming the setting, never a
500. The SET goes through the driver's connection, not Django's cursor, so it is one round trip
that counts as no query of the view (tests count queries).
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.db import DatabaseError, OperationalError, connection
from django.http import HttpResponse, JsonResponse

log = logging.getLogger(__name__)

READ, EXPORT, WORKER = "STATEMENT_TIMEOUT_SECONDS", "STATEMENT_TIMEOUT_EXPORT_SECONDS", "STATEMENT_TIMEOUT_WORKER_SECONDS"
EXPORT_PATH_PARTS = ("/xlsx/", "/focus/")
_in_worker = False


def request_kind(request) -> str:
    """The setting that bounds `request`'s statements."""
    if request.method not in ("GET", "HEAD", "OPTIONS"):
        return EXPORT
    if request.GET.get("format") in ("csv", "xlsx") or any(part in request.path for part in EXPORT_PATH_PARTS):
        return EXPORT
    return READ


def set_statement_timeout(setting: str) -> None:
    """`SET statement_timeout` on this thread's connection to `setting`'s seconds (0: the
    server's own). Postgres only; a database that cannot be reached is left to the view."""
    if connection.vendor != "postgresql":
        return
    seconds = getattr(settings, setting)
    try:
        connection.ensure_connection()
        connection.connection.execute(f"SET statement_timeout = {int(seconds * 1000)}")
    except DatabaseError as exc:     # the health probe and the views say what is down
        log.debug("statement_timeout not set: %s", exc)


def cut_short(exc: BaseException) -> bool:
    """Whether `exc` is a statement Postgres cancelled at its timeout."""
    from psycopg.errors import QueryCanceled
    return isinstance(exc, OperationalError) and isinstance(exc.__cause__, QueryCanceled)


class StatementTimeoutMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.statement_timeout_setting = request_kind(request)
        set_statement_timeout(request.statement_timeout_setting)
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not cut_short(exception):
            return None
        setting = getattr(request, "statement_timeout_setting", READ)
        reason = (f"the database took longer than {getattr(settings, setting):g} s ({setting}) for this request; "
                  "ask for a shorter window or a narrower scope")
        log.warning("%s %s: %s", request.method, request.path, reason)
        if request.path.startswith("/api/"):
            response = JsonResponse({"detail": reason}, status=503)
        else:
            response = HttpResponse(reason, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = "60"
        return response


def _worker_started(**_kwargs):
    global _in_worker
    _in_worker = True


def _connection_created(sender, connection, **_kwargs):
    if _in_worker and connection.vendor == "postgresql":
        connection.connection.execute(f"SET statement_timeout = {int(settings.STATEMENT_TIMEOUT_WORKER_SECONDS * 1000)}")


def connect_worker_signals() -> None:
    """Called by gpuportal/celery.py: a worker process's connections get the worker's timeout."""
    from celery.signals import worker_init, worker_process_init
    from django.db.backends.signals import connection_created

    worker_init.connect(_worker_started, weak=False)
    worker_process_init.connect(_worker_started, weak=False)
    connection_created.connect(_connection_created, weak=False, dispatch_uid="gpuportal-statement-timeout")
