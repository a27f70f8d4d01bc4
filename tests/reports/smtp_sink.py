"""A tiny SMTP server on a loopback port that keeps every message it is handed, so a real Celery
worker's e-mail (Django's SMTP backend) can be read back in a test."""
import email
import socketserver
import threading
from contextlib import contextmanager


class _Handler(socketserver.StreamRequestHandler):
    def reply(self, line: str):
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self):
        self.reply("220 sink ready")
        while True:
            line = self.rfile.readline()
            if not line:
                return
            verb = line.decode(errors="replace").strip().split(" ", 1)[0].upper()
            if verb in ("EHLO", "HELO"):
                self.reply("250 sink")
            elif verb in ("MAIL", "RCPT", "RSET", "NOOP"):
                self.reply("250 ok")
            elif verb == "DATA":
                self.reply("354 end with .")
                data = []
                while (chunk := self.rfile.readline()) not in (b".\r\n", b""):
                    data.append(chunk[1:] if chunk.startswith(b"..") else chunk)
                self.server.messages.append(email.message_from_bytes(b"".join(data)))
                self.reply("250 kept")
            elif verb == "QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("502 not here")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@contextmanager
def smtp_sink():
    """(port, messages): messages is the list of email.message.Message received so far."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.messages = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], server.messages
    finally:
        server.shutdown()
        server.server_close()
