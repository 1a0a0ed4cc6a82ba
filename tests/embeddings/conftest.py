"""Fixtures of the embedding tests: the scripted OpenAI-compatible server."""

from tests.support.openai_server import openai_server, openai_server_session  # noqa: F401
