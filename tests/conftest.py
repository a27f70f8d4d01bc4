"""Markers the suite sets by itself (pyproject.toml declares them all), and what every test
shares for speed (docs/conventions.md, "How the suite stays fast")."""
import pytest

# The fixtures through which a test reaches the database (pytest-django's).
DATABASE_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback",
                     "live_server"}

# Django's default hasher takes a million PBKDF2 rounds per password: about half a second of CPU
# for every user a test creates with a password or signs in through the login form. The tests
# check who may do what, not the hash, so they all use the cheapest one; production settings
# keep Django's default (a child process started by a test reads them afresh).
FAST_PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """`database` on every test that uses the database, so `make test-fast` can run the ones
    that need none (docs/conventions.md, "Tests pin behaviour with hand-computed figures")."""
    for item in items:
        if item.get_closest_marker("django_db") or DATABASE_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.database)


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hashing():
    """FAST_PASSWORD_HASHERS for the whole session, so a new test inherits it."""
    from django.test.utils import override_settings

    with override_settings(PASSWORD_HASHERS=FAST_PASSWORD_HASHERS):
        yield
