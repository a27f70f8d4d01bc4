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
def answering(answer, methods=("GET", "POST"), host="127.0.0.1"):
    """A real HTTP server on 127.0.0.1 answering each request of `methods` with `answer(request)`
    → (status, body, content type[, extra headers]), `request` being the handler (its `path`, `headers`); yields
    its URL. Every fake server of the tests is one of these; `host` is a loopback address
    (127.0.0.2 serves as "another host" for the outbound rules' tests)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            status, body, content_type, *more = answer(self)
            payload = body.encode() if isinstance(body, str) else body
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in (more[0] if more else {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout under test)

        def log_message(self, *args):
            pass

    for method in methods:
        setattr(Handler, f"do_{method}", Handler._answer)
    server = http.server.ThreadingHTTPServer((host, 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def serving(status, body, content_type="application/json"):
    """Answers every GET and POST with `status` and `body`: a broken or lying Prometheus."""
    return answering(lambda _request: (status, body, content_type))


def _forward(target: str, path: str):
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(target + path, timeout=60) as upstream:
            return upstream.status, upstream.read(), upstream.headers.get("Content-Type", "application/json")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), "application/json"


def slow_proxy(target, delay_seconds):
    """Forwards GETs to a real Prometheus, each after a delay: a slow server, for timing faults."""
    import time

    def answer(request):
        time.sleep(delay_seconds)
        return _forward(target, request.path)
    return answering(answer, methods=("GET",))


def api_only_proxy(target):
    """Forwards /api/v1/… to a real Prometheus and answers 404 to anything else (its own /metrics
    among them): a query layer in front of the store, as Thanos Query or Mimir are."""
    def answer(request):
        if not request.path.startswith("/api/v1/"):
            return 404, b"404 page not found\n", "text/plain"
        return _forward(target, request.path)
    return answering(answer, methods=("GET",))
