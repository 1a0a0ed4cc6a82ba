"""The inspector's HTTP tests: the API tests' database, settings, app and key fixtures."""

from tests.api.conftest import (  # noqa: F401  (fixtures shared with the API tests)
    api_settings,
    client,
    database_url,
    make_key,
)
