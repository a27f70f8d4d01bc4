import pytest
from rest_framework.test import APIClient

from .factories import make_user


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
