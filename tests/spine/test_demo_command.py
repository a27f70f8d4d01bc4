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
