"""The role users (tests/support/fixtures.py) for the token tests; `admin_user` stays
pytest-django's (a superuser)."""
from tests.support.fixtures import finance, team_lead, viewer  # noqa: F401
