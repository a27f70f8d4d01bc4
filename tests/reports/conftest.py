"""The money tests' role users, `api` and UTC billing zone, and the page tests' `seeded` rows
and `login` (tests/support/fixtures.py)."""
from tests.support.fixtures import admin_user, api, finance, login, seeded, team_lead, utc_billing, viewer  # noqa: F401
