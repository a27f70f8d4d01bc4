#!/usr/bin/env python3
"""The newcomer path, end to end: `make demo` in a checkout, then sign in as every demo role.

    python3 scripts/demo_smoke.py [CHECKOUT] [--timeout S] [--log-tail N]

Runs `make demo PORT=<a free port>` in CHECKOUT (its own process group, so the server and
everything `make` started go down together), waits until the URL the demo prints answers,
signs in through the login form as each role the demo prints, checks that the main pages
and the usage API answer with the demo's data, and stops the demo. Exits 0 when all is well;
otherwise prints `demo smoke FAILED: <one-line reason>` last and exits 1 (with --log-tail N,
the demo's last N lines of output come first). CHECKOUT defaults to the one this script is in.

Plain Python 3 with `requests`: it must run before `make setup` has made a virtualenv. The
environment (DEMO_HOURS, DATABASE_URL, ...) is passed through to `make demo`.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from demo_pages import Failure, column_of, number, rows

try:
    import requests
except ImportError:  # before `make setup`, the system Python may lack it
    sys.exit("demo smoke FAILED: needs the `requests` package (pip install requests, or run with .venv/bin/python)")

URL_LINE = re.compile(r"gpuportal demo: (http://\S+/)")
LOGIN_LINE = re.compile(r"user '([^']+)'\s+password '([^']+)'")
# What the demo's simulated cluster holds (apps/simulator/builders.py, apps/simulator/demo.py).
LEAD_TEAM = "research"
LEAD_NAMESPACES = ("ml-research", "notebooks")
OTHER_TEAM = "search"
IDLE_NAMESPACE = "notebooks"  # forgotten idle notebooks
FORGOTTEN_NOTEBOOK = "jupyter-erin"   # idle on an H100 for the demo's last three days
REORG_TEAM = "data"           # `batch` moves to it mid-month


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Demo:
    """`make demo` in its own process group, its output teed to a log file."""

    def __init__(self, checkout: Path, port: int):
        self.log_path = Path(tempfile.mkstemp(prefix="demo-smoke-", suffix=".log")[1])
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            ["make", "demo", f"PORT={port}"], cwd=checkout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        with open(self.log_path, "w") as log:
            for raw in iter(self.proc.stdout.readline, b""):
                line = raw.decode(errors="replace")
                log.write(line)
                log.flush()
                self.lines.extend(line.replace("\r", "\n").splitlines())

    def last_line(self) -> str:
        """The last line worth quoting: the error, not make's `*** [demo] Error 1` after it."""
        lines = [line.strip() for line in self.lines if line.strip()]
        for line in reversed(lines):
            if not line.startswith("make: ") and not line.startswith("make["):
                return line
        return lines[-1] if lines else "(no output)"

    def stop(self):
        if self.proc.poll() is None:
            for sig, wait in ((signal.SIGINT, 10), (signal.SIGTERM, 10), (signal.SIGKILL, 5)):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        # Stragglers of the group (runserver, prometheus) once make itself has gone.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._reader.join(5)


def wait_for_url(demo: Demo, timeout: float) -> tuple[str, dict[str, str]]:
    deadline = time.monotonic() + timeout
    url = None
    while time.monotonic() < deadline:
        if demo.proc.poll() is not None:
            raise Failure(f"`make demo` exited with status {demo.proc.returncode} before serving: "
                          f"{demo.last_line()}")
        text = "\n".join(demo.lines)
        if url is None and (m := URL_LINE.search(text)):
            url = m.group(1)
        if url:
            try:
                if requests.get(url + "accounts/login/", timeout=5).status_code == 200:
                    logins = dict(LOGIN_LINE.findall(text))
                    if not logins:
                        raise Failure("the demo printed no logins")
                    return url, logins
            except requests.ConnectionError:
                pass
        time.sleep(2)
    raise Failure(f"no answer from the demo within {timeout:.0f} s; last output: {demo.last_line()}")


def sign_in(url: str, user: str, password: str) -> requests.Session:
    s = requests.Session()
    r = s.get(url + "accounts/login/", timeout=30)
    if r.status_code != 200 or "csrftoken" not in s.cookies:
        raise Failure(f"login form: HTTP {r.status_code}, csrftoken cookie {'csrftoken' in s.cookies}")
    r = s.post(url + "accounts/login/", timeout=30, allow_redirects=False, headers={"Referer": url + "accounts/login/"},
               data={"username": user, "password": password, "next": "/",
                     "csrfmiddlewaretoken": s.cookies["csrftoken"]})
    if r.status_code != 302 or "sessionid" not in s.cookies:
        raise Failure(f"{user}: sign-in with the printed password failed (HTTP {r.status_code})")
    return s


def get(s: requests.Session, url: str, path: str, who: str, expect: int = 200) -> str:
    r = s.get(url + path.lstrip("/"), timeout=120, allow_redirects=False)
    if r.status_code != expect:
        raise Failure(f"{who}: GET /{path.lstrip('/')} answered HTTP {r.status_code}, expected {expect}")
    return r.text


def check_role(url: str, user: str, password: str) -> str:
    s = sign_in(url, user, password)
    scoped = user == "lead"
    money = user != "viewer"

    html = get(s, url, "/", user)
    teams = {r[0]: r for r in rows(html, "teams", user, "/") if len(r) >= 4}
    if LEAD_TEAM not in teams or number(teams[LEAD_TEAM][1]) <= 0:
        raise Failure(f"{user}: overview shows no allocated GPU-hours for team {LEAD_TEAM!r} (teams: {sorted(teams)})")
    if scoped and OTHER_TEAM in teams:
        raise Failure(f"{user}: overview shows team {OTHER_TEAM!r} to a lead of {LEAD_TEAM!r}")
    if not scoped and OTHER_TEAM not in teams:
        raise Failure(f"{user}: overview lacks team {OTHER_TEAM!r} (teams: {sorted(teams)})")
    days = rows(html, "daily", user, "/")
    used = column_of(html, "daily", "Used GPU-h", user, "/")
    if not any(len(d) > used and number(d[used]) > 0 for d in days):
        raise Failure(f"{user}: overview's daily table has no used GPU-hours")

    html = get(s, url, f"/teams/{LEAD_TEAM}/", user)
    namespaces = {r[0]: r for r in rows(html, "namespaces", user, f"/teams/{LEAD_TEAM}/") if len(r) >= 4}
    for ns in LEAD_NAMESPACES:
        if ns not in namespaces or number(namespaces[ns][1]) <= 0:
            raise Failure(f"{user}: team page /teams/{LEAD_TEAM}/ shows no allocated GPU-hours for namespace {ns!r} "
                          f"(namespaces: {sorted(namespaces)})")
    if scoped:
        get(s, url, f"/teams/{OTHER_TEAM}/", user, expect=403)
    else:   # the search team's light servers fit a MIG slice and a time-share (docs/demo.md)
        html = get(s, url, "/advice/rightsizing/", user)
        for advised in ("nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared"):
            if advised not in html:
                raise Failure(f"{user}: /advice/rightsizing/ advises no {advised} (the demo's light servers)")

    if money:
        check_month_end(s, url, user, scoped)
        html = get(s, url, "/chargeback/", user)
        hours = column_of(html, "statement-teams", "Allocated GPU-h", user, "/chargeback/")
        cost = column_of(html, "statement-teams", "Cost", user, "/chargeback/")
        lines = {r[0]: r for r in rows(html, "statement-teams", user, "/chargeback/") if len(r) > max(hours, cost)}
        if LEAD_TEAM not in lines or number(lines[LEAD_TEAM][hours]) <= 0:
            raise Failure(f"{user}: chargeback statement has no allocated GPU-hours for {LEAD_TEAM!r} "
                          f"(rows: {sorted(lines)})")
        if number(lines[LEAD_TEAM][cost]) <= 0:
            raise Failure(f"{user}: chargeback statement prices {LEAD_TEAM!r} at {lines[LEAD_TEAM][cost]!r}")
    else:
        get(s, url, "/chargeback/", user, expect=403)

    if user == "admin":
        html = get(s, url, "/admin-tools/claims/", user)
        if "sandbox" not in html:
            raise Failure(f"{user}: the Team claims page does not show the sandbox's pending claim")

    html = get(s, url, "/idle/", user)
    idle = column_of(html, "idle-pods", "Idle GPU-h", user, "/idle/")
    pods = [r for r in rows(html, "idle-pods", user, "/idle/") if len(r) > idle]
    if not any(p[1] == IDLE_NAMESPACE and number(p[idle]) > 0 for p in pods):
        raise Failure(f"{user}: idle page lists no idle pod in {IDLE_NAMESPACE!r} ({len(pods)} pods)")

    r = s.get(url + "api/v1/usage/", params={"group_by": "namespace"}, timeout=120,
              headers={"Accept": "application/json"})
    if r.status_code != 200:
        raise Failure(f"{user}: GET /api/v1/usage/?group_by=namespace answered HTTP {r.status_code}")
    api = {row["key"]: row for row in r.json().get("results", [])}
    if "ml-research" not in api or not api["ml-research"]["allocated_gpu_hours"] > 0:
        raise Failure(f"{user}: usage API has no allocated GPU-hours for ml-research (keys: {sorted(api)})")
    if money and not api["ml-research"].get("cost"):
        raise Failure(f"{user}: usage API shows no cost for ml-research")
    return (f"{user}: overview {teams[LEAD_TEAM][1]} GPU-h for {LEAD_TEAM}, {len(pods)} idle pods, "
            f"API {len(api)} namespaces")


def check_month_end(s: requests.Session, url: str, user: str, scoped: bool) -> None:
    """Last month closed with its statement, this month's statement carrying the late hours
    as adjustments, the re-org's team real, and the alerts the beat would have raised."""
    r = s.get(url + "api/v1/chargeback/", params={"group_by": "team"}, timeout=120)   # last month
    if r.status_code != 200:
        raise Failure(f"{user}: GET /api/v1/chargeback/ answered HTTP {r.status_code}")
    closed = r.json()
    previous = closed["period"]
    if not closed.get("closed") or not any(row["key"] == LEAD_TEAM and float(row["cost"] or 0) > 0
                                           for row in closed.get("results", [])):
        raise Failure(f"{user}: {previous} is not closed with a priced statement for {LEAD_TEAM!r}")
    year, month = int(previous[:4]), int(previous[5:7])
    period = f"{year + month // 12:04d}-{month % 12 + 1:02d}"
    r = s.get(url + "api/v1/chargeback/", params={"group_by": "team", "period": period}, timeout=120)
    if r.status_code != 200:
        raise Failure(f"{user}: GET /api/v1/chargeback/?period={period} answered HTTP {r.status_code}")
    current = r.json()
    adjustments = [line for row in current["results"] for line in row["lines"]
                   if line["kind"] == "adjustment" and line["adjusts_period"] == previous]
    if not adjustments:
        raise Failure(f"{user}: {period}'s statement has no late-data adjustment for {previous}")
    if not scoped and REORG_TEAM not in {row["key"] for row in current["results"]}:
        raise Failure(f"{user}: {period}'s statement has no row for the re-org's team {REORG_TEAM!r}")
    html = get(s, url, f"/chargeback/?period={previous}", user)
    if "frozen" not in html:
        raise Failure(f"{user}: the chargeback page for {previous} does not say it is closed")
    html = get(s, url, "/advice/alerts/", user)
    if FORGOTTEN_NOTEBOOK not in html or "budget" not in html:
        raise Failure(f"{user}: the alerts page lacks the idle notebook {FORGOTTEN_NOTEBOOK!r} or a budget alert")


def check_token(checkout: Path, url: str) -> None:
    """The API with a token, as the demo's banner says to make one."""
    py = checkout / ".venv" / "bin" / "python"
    # the demo's settings, as its banner says (DEBUG=true: no production SECRET_KEY needed)
    env = {**os.environ, "DATABASE_URL": os.environ.get("DATABASE_URL") or f"sqlite:///{checkout}/var/demo.sqlite3",
           "REDIS_URL": "", "DEBUG": "true"}
    out = subprocess.run([str(py), "manage.py", "api_token", "finance", "--name", "demo smoke", "--read-only"],
                         cwd=checkout, env=env, capture_output=True, text=True, timeout=120)
    m = re.search(r"\b(gpp_[0-9a-f]{64})\b", out.stdout)
    if out.returncode != 0 or not m:
        raise Failure(f"api_token finance failed: {(out.stderr or out.stdout).strip().splitlines()[-1:]}")
    r = requests.get(url + "api/v1/usage/", params={"group_by": "team"}, timeout=120,
                     headers={"Authorization": f"Token {m.group(1)}"})
    if r.status_code != 200 or not any(row.get("allocated_gpu_hours", 0) > 0 for row in r.json().get("results", [])):
        raise Failure(f"token API: GET /api/v1/usage/?group_by=team answered HTTP {r.status_code} without usage")


SERVING_RSS_LIMIT_MB = 400   # docs/demo.md, "Memory"


def serving_rss_mb(demo: Demo) -> float:
    """Resident size of the demo's server (the `runserver` the demo command became), read from
    /proc after every page has been visited."""
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            pid = int(status.parent.name)
            if os.getpgid(pid) != demo.proc.pid:
                continue
            cmdline = (status.parent / "cmdline").read_bytes().split(b"\0")
            if b"runserver" not in cmdline:
                continue
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except (OSError, ValueError):
            continue
        return int(fields["VmRSS"].split()[0]) / 1024
    raise Failure("no `runserver` process found in the demo's process group")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", nargs="?", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--timeout", type=float, default=900,
                        help="seconds to wait for the demo to serve, setup and ingest included (default 900)")
    parser.add_argument("--log-tail", type=int, default=0, metavar="N",
                        help="on failure, print the demo's last N lines of output first")
    args = parser.parse_args()
    # The demo's processes get SIGINT's default action even when ours came ignored (a background
    # job of a script), so stopping it lets `manage.py demo` shut its Prometheus down.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    checkout = args.checkout.resolve()
    if not (checkout / "Makefile").exists():
        print(f"demo smoke FAILED: {checkout} has no Makefile", file=sys.stderr)
        return 2
    port = free_port()
    began = time.monotonic()
    demo = Demo(checkout, port)
    print(f"demo smoke: `make demo PORT={port}` in {checkout} (log {demo.log_path})", flush=True)
    try:
        url, logins = wait_for_url(demo, args.timeout)
        print(f"demo smoke: {url} answers after {time.monotonic() - began:.0f} s; logins {', '.join(logins)}",
              flush=True)
        for user, password in logins.items():
            print("demo smoke: " + check_role(url, user, password), flush=True)
        check_token(checkout, url)
        print("demo smoke: token API answers with usage", flush=True)
        if sys.platform.startswith("linux"):
            rss = serving_rss_mb(demo)
            print(f"demo smoke: the server holds {rss:.0f} MB resident (limit {SERVING_RSS_LIMIT_MB} MB)", flush=True)
            if rss > SERVING_RSS_LIMIT_MB:
                raise Failure(f"the demo's server holds {rss:.0f} MB resident, over {SERVING_RSS_LIMIT_MB} MB")
    except Exception as exc:  # noqa: BLE001 — any surprise is a failure, said in one line
        reason = str(exc) if isinstance(exc, Failure) else f"{type(exc).__name__}: {exc}"
        demo.stop()
        if args.log_tail > 0:
            tail = demo.log_path.read_text(errors="replace").replace("\r", "\n").splitlines()[-args.log_tail:]
            print("\n".join(["--- last lines of `make demo` ---", *tail, "---"]), file=sys.stderr)
        print(f"demo smoke FAILED: {reason} (log {demo.log_path})", file=sys.stderr)
        return 1
    finally:
        demo.stop()
    demo.log_path.unlink()
    print(f"demo smoke passed in {time.monotonic() - began:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
