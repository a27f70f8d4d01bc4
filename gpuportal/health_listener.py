"""The health listener: `/healthz` and `/livez` answered outside gunicorn's request workers, on
a port of their own (docs/deploy.md, "Probes").

A gunicorn worker answers one request at a time, so while long reads hold every worker a probe
sent to the request port waits behind them (three idle calls once made `/healthz` take 27 s,
and a kubelet would take the pod out of its Service, or restart it, for being busy). This
process answers the probes alone:

- started by gunicorn's master when it is ready (`gpuportal/gunicorn.conf.py`, `when_ready`),
  as a process of its own (`python -m gpuportal.health_listener HOST:PORT`), stopped with it
  (`on_exit`), and ending by itself if the master is gone;
- `/healthz` checks what the request port's plain `/healthz` checks (`gpuportal.health`: the
  database answers `SELECT 1`, Redis `PING`) and answers the same body, within
  `BUDGET_SECONDS`: a check that has not answered by then is `"error: timeout"` and a 503;
- `/livez` answers 200 whenever this process does; anything else is a 404.

Nothing it answers needs a signed-in user or the monitoring token; the per-cluster ingest
detail stays on the request port's `/healthz` (docs/ingest.md, "The portal's own health").
"""
from __future__ import annotations

import json
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = logging.getLogger("gpuportal.health_listener")

BUDGET_SECONDS = 2.0        # the whole /healthz answer; the probes' timeoutSeconds is 5
PATHS = ("/healthz", "/livez")
CHECK_THREADS = 4           # checks that hang (an unreachable database) pile up to here, no further


def _checked(check) -> str:
    from django.db import connection

    try:
        return check()
    finally:
        connection.close()      # a fresh connection per probe: a restarted database is seen at once


class Checks:
    """Runs `gpuportal.health`'s checks on a few threads of their own, each answer bounded by
    the budget however the dependency behaves."""

    def __init__(self, budget: float = BUDGET_SECONDS):
        from gpuportal.health import check_database, check_redis

        self.budget = budget
        self.checks = {"database": check_database, "redis": check_redis}
        self.pool = ThreadPoolExecutor(CHECK_THREADS, thread_name_prefix="health-check")

    def run(self) -> tuple[int, dict]:
        futures = {name: self.pool.submit(_checked, check) for name, check in self.checks.items()}
        body = {"status": "ok"}
        for name, future in futures.items():
            try:
                body[name] = future.result(timeout=self.budget)
            except FutureTimeout:
                body[name] = "error: timeout"
            except Exception as exc:  # noqa: BLE001 - any failure is the answer
                body[name] = f"error: {type(exc).__name__}"
        healthy = body["database"] == "ok" and body["redis"] in ("ok", "not configured")
        body["status"] = "ok" if healthy else "unhealthy"
        return (200 if healthy else 503), body


def make_server(host: str, port: int, checks: Checks) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                status, body = checks.run()
            elif path == "/livez":
                status, body = 200, {"status": "ok"}
            else:
                status, body = 404, {"detail": "this port answers /healthz and /livez only"}
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass        # the kubelet asks every few seconds; failures say themselves in the body

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def parse_bind(bind: str) -> tuple[str, int]:
    host, _, port = bind.rpartition(":")
    return host.strip("[]") or "0.0.0.0", int(port)


def _stop_when_orphaned(server, parent: int) -> None:
    stopped = threading.Event()
    while not stopped.wait(1.0):
        if os.getppid() != parent:
            server.shutdown()
            return


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.WARNING, format="[health listener] %(message)s")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuportal.settings")
    host, port = parse_bind(argv[0])
    import django

    django.setup()
    try:
        server = make_server(host, port, Checks())
    except OSError as exc:
        log.error("cannot listen on %s:%s (%s); the probes will fail", host, port, exc)
        return 1
    threading.Thread(target=_stop_when_orphaned, args=(server, os.getppid()), daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
