"""The portal under a real gunicorn, started as production starts it (gpuportal/gunicorn.conf.py,
DEBUG off, a real secret key, two workers) against this test run's Postgres database: for the
tests of what only a real server shows (docs/deploy.md: "/metrics", "Probes")."""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest
import requests
from django.db import connection

from tests.support.fake_http import free_port

ROOT = Path(__file__).resolve().parents[2]


def answers(url: str) -> bool:
    """Whether `url` answers 200 within 2 s."""
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def start_gunicorn(tmp_path: Path, ready: Callable[[subprocess.Popen, str], bool], *, within: float = 90,
                   **env: str) -> tuple[subprocess.Popen, str]:
    """gunicorn on a free port, in its own process group, with `env` over the production-like
    settings; returns once `ready(proc, base URL)` holds (fails the test if it exits first or
    `within` seconds pass)."""
    (tmp_path / "static").mkdir(exist_ok=True)
    port = free_port()
    full = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "prometheus-multiproc"),
                DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{connection.settings_dict['NAME']}",
                DEBUG="false", SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="127.0.0.1",
                SECURE_SSL_REDIRECT="false", STATIC_ROOT=str(tmp_path / "static"), REDIS_URL="", LOG_LEVEL="ERROR")
    full.update(env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "gpuportal/gunicorn.conf.py", "--bind", f"127.0.0.1:{port}",
         "--workers", "2", "--log-level", "warning", "gpuportal.wsgi:application"],
        cwd=ROOT, env=full, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + within
    while not ready(proc, base):
        if proc.poll() is not None:
            pytest.fail("gunicorn exited during start-up:\n" + proc.stdout.read())
        if time.monotonic() > deadline:
            stop_gunicorn(proc)
            pytest.fail(f"gunicorn was not ready within {within:.0f} s")
        time.sleep(0.3)
    return proc, base


def stop_gunicorn(proc: subprocess.Popen) -> None:
    """SIGTERM to its process group, SIGKILL after 30 s."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
