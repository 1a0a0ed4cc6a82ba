"""Fault tests: the API's database fixtures (a fresh migrated database per test)."""

from tests.api.conftest import database_url  # noqa: F401
