"""Fixtures of the maintenance-model tests: the scripted OpenAI-compatible server, clean
settings (no MEMORY_/OPENAI_ variables from the environment) and a clean model cache."""

from __future__ import annotations

from tests.support.environment import clean_environment  # noqa: F401
from tests.support.openai_server import openai_server, openai_server_session  # noqa: F401



