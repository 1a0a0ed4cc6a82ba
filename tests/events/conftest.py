"""Fixtures of the event tests: the Dreaming tests' per-test settings (one migrated database
per module, hash embeddings, offline)."""

from tests.dreaming.conftest import settings  # noqa: F401
from tests.support.environment import clean_environment  # noqa: F401
