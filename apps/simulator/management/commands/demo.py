import os
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
        make_sqlite_dir(settings.DATABASES["default"])
        call_command("migrate", interactive=False, verbosity=0)
        logins = create_logins()
        if is_loaded():
            self.stdout.write("demo data already loaded (delete var/demo.sqlite3 to start afresh)")
        else:
            bar = tqdm(total=None, unit="chunk", desc="ingest demo", file=sys.stderr)

            def progress(done, total):
                bar.total = total
                bar.update(done - bar.n)

            load_demo(opts["hours"], log=self.stdout.write, progress=progress)
            bar.close()
        url = f"http://127.0.0.1:{opts['port']}/"
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(f"gpuportal demo: {url}"))
        for username, (role, password) in logins.items():
            self.stdout.write(f"  {role:<10} user {username!r:<10} password {password!r}")
        self.stdout.write(f"  API: Authorization: Token <key> — make one signed in at {url}account/tokens/ "
                          "(shown once; read-only or read-write, with an expiry), or "
                          "`.venv/bin/python manage.py api_token finance --name script --read-only`")
        if opts["no_serve"]:
            return
        call_command("runserver", f"127.0.0.1:{opts['port']}", use_reloader=False)


def make_sqlite_dir(db: dict) -> None:
    """SQLite makes the database file but not its directory (var/ is not in a fresh clone)."""
    name = str(db.get("NAME") or "")
    if "sqlite" in db["ENGINE"] and name and name != ":memory:" and not name.startswith("file:"):
        Path(name).parent.mkdir(parents=True, exist_ok=True)
