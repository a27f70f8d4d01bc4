"""`manage.py demo` on a fresh clone: the SQLite file's directory (git-ignored var/) is made for it."""
from apps.simulator.management.commands.demo import make_sqlite_dir


def test_sqlite_directory_is_made(tmp_path):
    path = tmp_path / "var" / "nested" / "demo.sqlite3"
    make_sqlite_dir({"ENGINE": "django.db.backends.sqlite3", "NAME": path})
    assert path.parent.is_dir() and not path.exists()
    make_sqlite_dir({"ENGINE": "django.db.backends.sqlite3", "NAME": str(path)})  # again: no error


def test_other_databases_are_left_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_sqlite_dir({"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"})
    make_sqlite_dir({"ENGINE": "django.db.backends.sqlite3", "NAME": "file:memdb?mode=memory&cache=shared"})
    make_sqlite_dir({"ENGINE": "django.db.backends.postgresql", "NAME": "gpuportal/x"})
    assert list(tmp_path.iterdir()) == []


def test_one_progress_bar_over_both_ingest_runs():
    """#26: the demo's log showed two bars (the second run restarted the count) and a first
    estimate of "47:27" (the bar started before the Prometheus backfill)."""
    import io

    from apps.simulator.management.commands.demo import OneBar

    out = io.StringIO()
    bar = OneBar(file=out)
    assert bar.bar is None                      # nothing drawn (and no clock started) before a chunk
    for i in range(1, 31):                      # the history up to the close: 30 chunks
        bar(i, 30)
    for i in range(1, 3):                       # the late hours: 2 more
        bar(i, 2)
    assert (bar.bar.n, bar.bar.total) == (32, 32)
    bar.close()
    drawn = out.getvalue()
    assert drawn.count("\n") <= 1 and "32/32" in drawn.split("\r")[-1]   # one line redrawn, ending at 32 of 32


def test_sigterm_unwinds_like_ctrl_c():
    """#26: SIGTERM killed the demo without unwinding, leaving its Prometheus running; now it
    raises SystemExit, so `with serve_scenario(...)` stops the server as Ctrl-C does."""
    import os
    import signal

    from apps.simulator.management.commands.demo import stop_on_sigterm

    previous = signal.signal(signal.SIGTERM, stop_on_sigterm)
    stopped = []
    try:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0.1) if hasattr(signal, "sigtimedwait") else None
        finally:
            stopped.append("server stopped")
    except SystemExit as exc:
        assert exc.code == 128 + signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert stopped == ["server stopped"]


def test_the_in_memory_broker_names_its_host(monkeypatch, caplog):
    """#26: the demo's log carried a stray "No hostname was supplied" from kombu: its broker
    URL, with no REDIS_URL, was a bare "memory://"."""
    import importlib
    import logging

    from kombu import Connection

    import gpuportal.settings.jobs as jobs

    monkeypatch.setenv("REDIS_URL", "")
    try:
        jobs = importlib.reload(jobs)
        with caplog.at_level(logging.WARNING, logger="kombu.connection"):
            Connection(jobs.CELERY_BROKER_URL).info()
        assert jobs.CELERY_TASK_ALWAYS_EAGER and jobs.CELERY_BROKER_URL.startswith("memory://")
        assert not [r for r in caplog.records if "hostname" in r.getMessage()]
    finally:
        monkeypatch.undo()
        importlib.reload(jobs)


def test_story_lines_never_share_a_line_with_the_bar():
    """#43: the demo's progress bar was interleaved with its story lines ("closed 2026-10; then 6
    late hours of it arrive" printed onto the bar's line). A line said while the bar is drawn
    clears it, stands on its own line, and the bar is drawn again below it."""
    import io

    from apps.simulator.management.commands.demo import OneBar

    terminal = io.StringIO()          # stdout and stderr on one terminal
    bar = OneBar(file=terminal, out=terminal)
    bar.log("imported the example rate card")
    for i in range(1, 11):
        bar(i, 10)
    bar.log("closed 2026-10; then 6 late hours of it arrive")
    for i in range(1, 3):
        bar(i, 2)
    bar.close()
    lines = [line.split("\r")[-1] for line in terminal.getvalue().split("\n")]
    assert "imported the example rate card" in lines
    assert "closed 2026-10; then 6 late hours of it arrive" in lines
