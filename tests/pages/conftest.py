import pytest

from .seed import seed as _seed


@pytest.fixture
def seeded(db):
    return _seed()


@pytest.fixture
def login(client, seeded):
    def as_(name):
        client.force_login(seeded["users"][name])
        return client
    return as_
