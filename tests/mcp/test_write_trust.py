"""The trust class of a write is the domain's (``trust.write_trust_class``,
``trust.written_by_agent``): the same write gets the same class whichever front end carries
it. An agent's write through the MCP server, through the API with an agent's key, and
through the API marked ``X-Memory-Writer: agent`` are all the agent's inference; the same
statement through the person's own key is theirs. Sessions: the run an agent appends to is
agent-written the same three ways. The MCP server in process, over the real
HTTP API and a fresh database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from mcp.client import Client

from memory_platform.features import apikeys
from memory_platform.shared.access import AccessContext
from memory_platform.shared.trust import Caller, write_trust_class
from tests.mcp.test_mcp_e2e import LiveApi, call, run_in_process
from tests.support.settings import hash_embedding_settings

USER = "dev-trust"
AGENT_HEADER = {"X-Memory-Writer": "agent"}


@pytest.fixture
def live(database_url: str, tmp_path: Path) -> Iterator[LiveApi]:
    with LiveApi(hash_embedding_settings(database_url, data_dir=tmp_path / "state")) as api:
        yield api


@pytest.fixture
def tokens(live: LiveApi, database_url: str) -> dict[str, str]:
    """The user's own write key, an agent's write key of the same user."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        made = {name: apikeys.create_key(conn, instance_key="default", user_id=USER,
                                         scopes=("memory:read", "memory:write"), name=name,
                                         agent=name == "agent")[1]
                for name in ("person", "agent")}
    return made


def _source_trust(database_url: str, memory_id: str) -> str:
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT trust_class FROM agent_memory_sources"
                            " WHERE source_key = %s", (f"memory:{memory_id}",)).fetchone()[0]


def _run_agent_written(database_url: str, session: str) -> bool:
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT agent_written FROM agent_session_runs"
                            " WHERE session_key = %s", (session,)).fetchone()[0]


def _api(live: LiveApi, token: str, path: str, body: dict, headers: dict | None = None) -> dict:
    with httpx.Client(base_url=live.url, timeout=30) as http:
        response = http.post(path, json=body, headers={"Authorization": f"Bearer {token}",
                                                       **(headers or {})})
    assert response.status_code == 201, response.text
    return response.json()


def test_the_same_write_gets_the_same_trust_class_through_mcp_and_the_api(
        live: LiveApi, tokens: dict[str, str], database_url: str):
    content = "The staging cluster is rebuilt every Sunday night ({})."
    stored: dict[str, str] = {}

    async def through_mcp(client: Client) -> None:
        is_error, text = await call(client, "memory_store", {"content": content.format("mcp")})
        assert not is_error, text
        stored["mcp"] = json.loads(text)["id"]

    run_in_process({"MEMORY_API_URL": live.url, "MEMORY_WRITE_TOKEN": tokens["person"]},
                   through_mcp)
    stored["agent key"] = _api(live, tokens["agent"], "/api/v1/memory",
                               {"content": content.format("agent key")})["id"]
    stored["agent header"] = _api(live, tokens["person"], "/api/v1/memory",
                                  {"content": content.format("agent header")},
                                  AGENT_HEADER)["id"]
    stored["person"] = _api(live, tokens["person"], "/api/v1/memory",
                            {"content": content.format("person")})["id"]

    ctx = AccessContext("default", user_id=USER)
    person, agent = Caller("default", USER), Caller("default", USER, agent=True)
    expected = {"mcp": write_trust_class(person, ctx, declared_agent=True),
                "agent key": write_trust_class(agent, ctx),
                "agent header": write_trust_class(person, ctx, declared_agent=True),
                "person": write_trust_class(person, ctx)}
    assert {path: _source_trust(database_url, memory) for path, memory in stored.items()} \
        == expected == {"mcp": "assistant_inference", "agent key": "assistant_inference",
                        "agent header": "assistant_inference", "person": "human_direct"}


def test_the_same_append_marks_the_run_the_same_through_mcp_and_the_api(
        live: LiveApi, tokens: dict[str, str], database_url: str):
    turn = {"role": "user", "content": "I prefer tea over coffee."}

    async def through_mcp(client: Client) -> None:
        is_error, text = await call(client, "session_append",
                                    {"sessionKey": "s-mcp", "items": [turn]})
        assert not is_error, text

    run_in_process({"MEMORY_API_URL": live.url, "MEMORY_WRITE_TOKEN": tokens["person"]},
                   through_mcp)
    _api(live, tokens["agent"], "/api/v1/sessions/s-agent-key/items", {"items": [turn]})
    _api(live, tokens["person"], "/api/v1/sessions/s-agent-header/items", {"items": [turn]},
         AGENT_HEADER)
    _api(live, tokens["person"], "/api/v1/sessions/s-person/items", {"items": [turn]})
    assert {s: _run_agent_written(database_url, s)
            for s in ("s-mcp", "s-agent-key", "s-agent-header", "s-person")} == {
        "s-mcp": True, "s-agent-key": True, "s-agent-header": True, "s-person": False}
