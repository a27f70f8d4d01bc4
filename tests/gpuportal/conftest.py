"""The page tests' `seeded` rows and `login` (tests/support/fixtures.py), for the error pages."""
from tests.support.fixtures import login, seeded  # noqa: F401
