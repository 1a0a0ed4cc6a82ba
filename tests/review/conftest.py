"""Fixtures of the review tests: the Dreaming tests' per-test settings (one migrated database
per module, hash embeddings), a clean environment and the scripted provider on loopback."""

from tests.dreaming.conftest import settings  # noqa: F401
from tests.support.environment import clean_environment  # noqa: F401
from tests.support.openai_server import openai_server, openai_server_session  # noqa: F401
