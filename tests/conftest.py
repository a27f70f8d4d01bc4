"""Markers the suite sets by itself (pyproject.toml declares them all)."""
import pytest

# The fixtures through which a test reaches the database (pytest-django's).
DATABASE_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback",
                     "live_server"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """`database` on every test that uses the database, so `make test-fast` can run the ones
    that need none (docs/conventions.md, "Tests pin behaviour with hand-computed figures")."""
    for item in items:
        if item.get_closest_marker("django_db") or DATABASE_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.database)
