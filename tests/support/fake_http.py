"""A real HTTP server on 127.0.0.1 that answers like a broken or lying Prometheus."""
import http.server
import socket
import threading
from contextlib import contextmanager


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(status, body, content_type="application/json"):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            payload = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_POST = do_GET

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def slow_proxy(target, delay_seconds):
    """Forwards GETs to a real Prometheus, each after a delay: a slow server, for timing faults."""
    import time
    import urllib.request

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            time.sleep(delay_seconds)
            try:
                with urllib.request.urlopen(target + self.path, timeout=60) as upstream:
                    payload, status = upstream.read(), upstream.status
                    ctype = upstream.headers.get("Content-Type", "application/json")
            except urllib.error.HTTPError as exc:
                payload, status, ctype = exc.read(), exc.code, "application/json"
            try:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout under test)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def api_only_proxy(target):
    """Forwards /api/v1/… to a real Prometheus and answers 404 to anything else (its own /metrics
    among them): a query layer in front of the store, as Thanos Query or Mimir are."""
    import urllib.request

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if not self.path.startswith("/api/v1/"):
                payload, status, ctype = b"404 page not found\n", 404, "text/plain"
            else:
                try:
                    with urllib.request.urlopen(target + self.path, timeout=60) as upstream:
                        payload, status = upstream.read(), upstream.status
                        ctype = upstream.headers.get("Content-Type", "application/json")
                except urllib.error.HTTPError as exc:
                    payload, status, ctype = exc.read(), exc.code, "application/json"
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
