"""The money tests' role users, `api` and UTC billing zone (tests/support/fixtures.py)."""
from tests.support.fixtures import admin_user, api, finance, team_lead, utc_billing, viewer  # noqa: F401
