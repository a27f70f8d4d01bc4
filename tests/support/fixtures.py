"""Fixtures shared by more than one folder of tests, made available where they serve by the
folder's conftest.py importing them (tests/accounting/, tests/reports/, tests/gpuportal/).

The role users and `api` are the money tests' (one user per role, an APIClient per user); the
billing zone is UTC unless a test sets another. `seeded` and `login` are the page tests': the
hand-chosen rows of tests/support/page_seed.py and a client signed in as one of its users.
"""
import pytest
from rest_framework.test import APIClient

from .factories import make_user
from .page_seed import seed as _seed


@pytest.fixture
def finance(db):
    return make_user("finance", "finance")


@pytest.fixture
def admin_user(db):
    return make_user("admin", "admin")


@pytest.fixture
def team_lead(db):
    return make_user("team_lead", "team_lead")


@pytest.fixture
def viewer(db):
    return make_user("viewer", "viewer")


@pytest.fixture
def api():
    def client_for(user=None):
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        return client
    return client_for


@pytest.fixture(autouse=True)
def utc_billing(settings):
    settings.BILLING_TIMEZONE = "UTC"


@pytest.fixture
def seeded(db):
    return _seed()


@pytest.fixture
def login(client, seeded):
    def as_(name):
        client.force_login(seeded["users"][name])
        return client
    return as_
