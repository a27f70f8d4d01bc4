import os
import signal
import sys
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from tqdm import tqdm

from apps.simulator.demo import create_logins, is_loaded, load_demo


class Command(BaseCommand):
    help = ("Migrate, load a simulated GPU cluster since the first of last month (closed, alerts, advice), "
            "create one login per role, and serve.")

    def add_arguments(self, parser):
        hours = os.environ.get("DEMO_HOURS")
        parser.add_argument("--hours", type=int, default=int(hours) if hours else None,
                            help="hours of simulated history (default: since the first of last month)")
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--no-serve", action="store_true", help="load the data and stop")

    def handle(self, *args, **opts):
        # SIGTERM stops the demo as Ctrl-C does: unwinding, so the Prometheus it started is
        # stopped and its private TSDB copy removed (the default SIGTERM kills without that).
        signal.signal(signal.SIGTERM, stop_on_sigterm)
        make_sqlite_dir(settings.DATABASES["default"])
        call_command("migrate", interactive=False, verbosity=0)
        logins = create_logins()
        if is_loaded():
            self.stdout.write("demo data already loaded (delete var/demo.sqlite3 to start afresh)")
        else:
            progress = OneBar()
            try:
                load_demo(opts["hours"], log=progress.log, progress=progress)
            finally:
                progress.close()
        url = f"http://127.0.0.1:{opts['port']}/"
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(f"gpuportal demo: {url}"))
        for username, (role, password) in logins.items():
            self.stdout.write(f"  {role:<10} user {username!r:<10} password {password!r}")
        self.stdout.write(f"  API: Authorization: Token <key> — make one signed in at {url}account/tokens/ "
                          "(shown once; read-only or read-write, with an expiry), or "
                          "`DEBUG=true .venv/bin/python manage.py api_token finance --name script --read-only` (the demo's settings)")
        if opts["no_serve"]:
            return
        serve(opts["port"])


def serve(port: int) -> None:
    """Serve from a fresh process: loading the history leaves this one holding over a GB that
    Python never hands back, and a new runserver in its place starts small (docs/demo.md,
    "Memory"). `exec` keeps the process id, so Ctrl-C and SIGTERM still reach the server."""
    sys.stdout.flush()
    sys.stderr.flush()
    manage = str(Path(settings.BASE_DIR) / "manage.py")
    os.execv(sys.executable, [sys.executable, manage, "runserver", f"127.0.0.1:{port}", "--noreload"])


def stop_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


class OneBar:
    """One progress bar over the demo's ingest runs (the history up to the close, then the
    late hours): each run reports (done, total) of its own chunks; the bar adds them up. It
    starts at the first chunk, not before the Prometheus backfill, so its first estimate is
    of ingest alone."""

    def __init__(self, file=None, out=None):
        self.file = file or sys.stderr
        self.out = out or sys.stdout     # where the story's lines go
        self.bar = None
        self.offset = 0            # chunks of the runs before this one
        self.last = (0, 0)         # (done, total) of the current run

    def __call__(self, done: int, total: int) -> None:
        if done < self.last[0] or (done == self.last[0] == self.last[1] and total and done):
            self.offset += self.last[1]   # a new run: the last one's chunks are all done
        self.last = (done, total)
        if self.bar is None:
            self.bar = tqdm(total=self.offset + total, initial=self.offset + done, unit="chunk",
                            desc="ingest demo", file=self.file, smoothing=0.1)
            return
        self.bar.total = self.offset + total
        self.bar.update(self.offset + done - self.bar.n)

    def log(self, line: str) -> None:
        """A story line said while the bar is drawn: the bar steps aside (cleared, the line
        written on its own, the bar drawn again below it), so the two never share a line."""
        if self.bar is None:
            self.out.write(line + "\n")
            self.out.flush()
        else:
            tqdm.write(line, file=self.out)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def make_sqlite_dir(db: dict) -> None:
    """SQLite makes the database file but not its directory (var/ is not in a fresh clone)."""
    name = str(db.get("NAME") or "")
    if "sqlite" in db["ENGINE"] and name and name != ":memory:" and not name.startswith("file:"):
        Path(name).parent.mkdir(parents=True, exist_ok=True)
