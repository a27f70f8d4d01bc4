import pytest
from django.db import transaction

from .seed import seed


@pytest.fixture(scope="module")
def world(request, django_db_setup, django_db_blocker):
    """Seeded once per module inside a transaction that is rolled back at the end; each test
    runs in its own savepoint (the `db` fixture), so a test's writes never reach the next.
    A module may set NAMES (a seed.Names) to seed hostile names."""
    with django_db_blocker.unblock():
        with transaction.atomic():
            yield seed(getattr(request.module, "NAMES", None))
            transaction.set_rollback(True)


@pytest.fixture
def as_role(db, world, client):
    def login(role):
        if role != "anonymous":
            client.force_login(world.users[role])
        return client
    return login
