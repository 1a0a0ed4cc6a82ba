"""The session tools of the MCP server (memory_grep, memory_describe, memory_expand,
session_append), in process with the official SDK's client, against the real HTTP API
(uvicorn on a loopback port) over a fresh migrated database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from mcp.client import Client
from pgvector.psycopg import register_vector

from memory_platform.features import apikeys
from memory_platform.features.sessions.items import complete_run
from memory_platform.features.sessions.shared_facts import extract_shared_facts
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from tests.mcp.test_mcp_e2e import LiveApi, call, run_in_process
from tests.sessions.test_reads import add_summary
from tests.support.settings import hash_embedding_settings

USER = "dev-mcp"
SESSION = "agent:main:3f2a/mcp"


@pytest.fixture
def live(database_url: str, tmp_path: Path) -> Iterator[LiveApi]:
    settings: Settings = hash_embedding_settings(database_url, data_dir=tmp_path / "state")
    with LiveApi(settings) as api:
        yield api


@pytest.fixture
def env(live: LiveApi, database_url: str) -> dict[str, str]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        _, read = apikeys.create_key(conn, instance_key="default", user_id=USER,
                                     scopes=("memory:read",), name="mcp-read")
        _, write = apikeys.create_key(conn, instance_key="default", user_id=USER,
                                      scopes=("memory:write",), name="mcp-write")
    return {"MEMORY_API_URL": live.url, "MEMORY_READ_TOKEN": read,
            "MEMORY_WRITE_TOKEN": write}


def test_append_then_grep_describe_and_expand(env: dict[str, str], database_url: str):
    turns = [{"role": "user", "content": "The Kubernetes upgrade to 1.31 is set for May 4.",
              "clientItemId": "t-1", "occurredAt": "2026-04-20T10:00:00+02:00"},
             {"role": "tool", "content": "calendar: May 4 is free", "tool": "calendar",
              "toolCallId": "call-1", "clientItemId": "t-2"},
             {"role": "assistant", "content": "Booked: Kubernetes 1.31 on May 4.",
              "clientItemId": "t-3"}]
    state: dict = {}

    async def append(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("memory_grep", "memory_describe", "memory_expand"):
            assert "untrusted data" in tools[name].description
            assert tools[name].annotations.read_only_hint is True
        assert "clientItemId" in tools["session_append"].description
        assert "secrets" in tools["session_append"].description
        is_error, text = await call(client, "session_append",
                                    {"sessionKey": SESSION, "items": turns})
        assert not is_error, text
        body = json.loads(text)
        assert (body["appended"], body["sessionKey"]) == (3, SESSION)
        state["ids"] = [i["id"] for i in body["items"]]
        is_error, text = await call(client, "session_append",
                                    {"sessionKey": SESSION, "items": turns[:1]})
        assert not is_error and json.loads(text)["duplicates"] == 1, text

    run_in_process(env, append)
    ids = state["ids"]
    with psycopg.connect(database_url, autocommit=True) as conn:
        leaf = add_summary(conn, "default", SESSION, "Kubernetes 1.31 upgrade booked.",
                           messages=ids, user_id=USER)

    async def read(client: Client) -> None:
        is_error, text = await call(client, "memory_grep", {"pattern": "kubernetes 1.31"})
        assert not is_error, text
        hits = json.loads(text)["results"]
        assert [h["id"] for h in hits] == [leaf, ids[2]]
        assert all(h["trust"] == "untrusted-data" for h in hits)
        is_error, text = await call(client, "memory_grep", {"pattern": "calendar",
                                                            "sessionKey": SESSION,
                                                            "roles": ["tool"]})
        assert not is_error and [h["id"] for h in json.loads(text)["results"]] == [ids[1]]

        is_error, text = await call(client, "memory_describe", {"id": ids[1]})
        assert not is_error, text
        node = json.loads(text)
        assert node["metadata"] == {"tool": "calendar", "toolCallId": "call-1"}
        assert [s["id"] for s in node["summaries"]] == [leaf]

        is_error, text = await call(client, "memory_expand", {"id": leaf, "limit": 2})
        assert not is_error, text
        page = json.loads(text)
        assert [m["id"] for m in page["messages"]] == ids[:2]
        is_error, text = await call(client, "memory_expand",
                                    {"id": leaf, "afterSeq": page["nextAfterSeq"]})
        assert not is_error and [m["id"] for m in json.loads(text)["messages"]] == ids[2:]

        # API refusals are tool errors with the API's code; the adapter checks its schema.
        is_error, text = await call(client, "memory_describe", {"id": "summary:nope"})
        assert is_error and "memory API error 404 not_found" in text, text
        is_error, text = await call(client, "memory_grep", {"pattern": "ab"})
        assert is_error and "pattern" in text, text
        is_error, text = await call(client, "session_append", {
            "sessionKey": SESSION,
            "items": [{"role": "user", "content": "key sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3"
                       "n4O5p6Q7r8S9t0"}]})
        assert is_error and "memory API error 422 credential_detected" in text, text
        for token in (env["MEMORY_READ_TOKEN"], env["MEMORY_WRITE_TOKEN"]):
            assert token not in text

    run_in_process(env, read)
    with psycopg.connect(database_url, autocommit=True) as conn:
        count = conn.execute("SELECT count(*) FROM agent_context_messages").fetchone()[0]
    assert count == 3


def test_turns_appended_through_the_adapter_are_the_agents_and_wait_for_review(
        env: dict[str, str], database_url: str, tmp_path: Path):
    async def append(client: Client) -> None:
        assert "review" in {t.name: t for t in (await client.list_tools()).tools}[
            "session_append"].description
        is_error, text = await call(client, "session_append", {
            "sessionKey": SESSION, "runId": "r-1",
            "items": [{"role": "user", "content": "I prefer tea over coffee."}]})
        assert not is_error, text

    run_in_process(env, append)
    settings = hash_embedding_settings(database_url, data_dir=tmp_path / "maintenance",
                                       maintenance_default_model="extractive")
    with psycopg.connect(database_url, autocommit=True) as conn:
        register_vector(conn)
        # The adapter sends X-Memory-Writer: agent: its run is agent-written.
        assert conn.execute("SELECT agent_written FROM agent_session_runs"
                            " WHERE session_key = %s AND run_id = 'r-1'",
                            (SESSION,)).fetchone()[0] is True
        complete_run(conn, settings, AccessContext("default", user_id=USER,
                                                   session_key=SESSION), "r-1")
        report = extract_shared_facts(conn, settings, "default", SESSION)
        assert report.outcome == "completed" and len(report.memory_ids) == 1
        trust, status = conn.execute(
            "SELECT s.trust_class, a.status FROM agent_memories m"
            "  JOIN agent_memory_sources s ON s.id = m.source_id"
            "  JOIN agent_memory_assertions a ON a.id = m.assertion_id"
            " WHERE m.id = %s", (report.memory_ids[0],)).fetchone()
    assert (trust, status) == ("assistant_inference", "candidate")
