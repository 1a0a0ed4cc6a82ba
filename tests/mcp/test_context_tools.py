"""context_search and context_get, the read path the specification prefers (issue 32.7), as
MCP tools: in process with the official SDK's client, against the real HTTP API on loopback;
another user's private memory is found by neither."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from mcp.client import Client

from memory_platform.features import apikeys
from tests.mcp.test_mcp_e2e import LiveApi, call, run_in_process
from tests.support.settings import hash_embedding_settings

FACT = "The staging database is restored from the nightly backup every Saturday."
SECRET = "Mallory keeps the staging restore password in her notebook."


@pytest.fixture
def live(database_url: str, tmp_path: Path) -> Iterator[LiveApi]:
    with LiveApi(hash_embedding_settings(database_url, data_dir=tmp_path / "state")) as api:
        yield api


def _key(database_url: str, user: str, scopes: tuple[str, ...]) -> str:
    with psycopg.connect(database_url, autocommit=True) as conn:
        return apikeys.create_key(conn, instance_key="default", user_id=user, scopes=scopes,
                                  name=f"{user}-key")[1]


def test_context_search_then_context_get_end_to_end(live: LiveApi, database_url: str):
    writer = {"Authorization": f"Bearer {_key(database_url, 'dev', ('memory:write',))}"}
    for content, visibility, headers in (
            (FACT, "team", writer),
            (SECRET, "private",
             {"Authorization": f"Bearer {_key(database_url, 'mallory', ('memory:write',))}"})):
        response = httpx.post(f"{live.url}/api/v1/memory", headers=headers,
                              json={"content": content, "visibility": visibility})
        assert response.status_code == 201, response.text
    turn = httpx.post(f"{live.url}/api/v1/sessions/web:dev-1/items", headers=writer,
                      json={"items": [{"role": "user", "content": "Which day is the restore?"}]})
    assert turn.status_code == 201, turn.text
    env = {"MEMORY_API_URL": live.url,
           "MEMORY_READ_TOKEN": _key(database_url, "dev", ("memory:read",)),
           "MEMORY_WRITE_TOKEN": _key(database_url, "dev", ("memory:write",))}

    async def scenario(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("context_search", "context_get"):
            assert "untrusted data" in tools[name].description
            assert tools[name].annotations.read_only_hint is True
        assert set(tools["context_search"].input_schema["properties"]) == {
            "query", "depth", "intent", "limit", "sessionKey"}

        is_error, text = await call(client, "context_search",
                                    {"query": "when is the staging database restored"})
        assert not is_error, text
        results = json.loads(text)["results"]
        hit = next(r for r in results if r["content"] == FACT)
        assert hit["trust"] == "untrusted-data" and hit["foundBy"]
        assert all(SECRET not in r["content"] for r in results)

        is_error, text = await call(client, "context_get", {"id": hit["id"]})
        assert not is_error, text
        assert json.loads(text)["content"] == FACT

        is_error, text = await call(client, "context_search",
                                    {"query": "staging restore password", "depth": "deep"})
        assert not is_error, text
        assert all(SECRET not in r["content"] for r in json.loads(text)["results"])
        is_error, text = await call(client, "context_get", {"id": "memory:nope"})
        assert is_error and "memory API error 4" in text, text

        # memory_feedback: the item helped (issue 32.6), once per run.
        assert hit["id"].startswith("assertion:"), hit
        for recorded in (1, 0):
            is_error, text = await call(client, "memory_feedback", {
                "assertionIds": [hit["id"]], "kind": "helpful", "runId": "run-mcp-1"})
            assert not is_error and json.loads(text)["recorded"] == recorded, text

        # session_replay: the session as a runtime replays it (issue 32.3).
        is_error, text = await call(client, "session_replay", {"sessionKey": "web:dev-1"})
        assert not is_error, text
        replayed = json.loads(text)
        assert [t["content"] for t in replayed["turns"]] == ["Which day is the restore?"]

        # memory_search passes what the task is about on (issue 32.2); the API checks it.
        is_error, text = await call(client, "memory_search", {
            "query": "staging database restored", "subjectRefs": {"taskId": "T-1"}})
        assert not is_error and FACT in text, text
        is_error, text = await call(client, "memory_search", {
            "query": "staging database restored", "subjectRefs": {"customer": "x"}})
        assert is_error and "memory API error 400" in text and "subjectRefs" in text, text

        # memory_correct: the agent proposes, the user reviews (issue 32.4).
        is_error, text = await call(client, "memory_store",
                                    {"content": "The staging VPN is vpn-old.example."})
        assert not is_error, text
        proposed = json.loads(text)["id"]
        is_error, text = await call(client, "memory_correct", {
            "id": proposed, "content": "The staging VPN is vpn-new.example."})
        assert not is_error and json.loads(text)["status"] == "proposed", text

        # memory_forget: the user's own memory goes, for good (issue 32.4).
        assert tools["memory_forget"].annotations.destructive_hint is True
        is_error, text = await call(client, "memory_store", {"content": "My locker is 17."})
        assert not is_error, text
        stored = json.loads(text)["id"]
        is_error, text = await call(client, "memory_forget", {"id": stored})
        assert not is_error and json.loads(text)["memoryId"] == stored, text
        for tool, arguments in (("memory_forget", {"id": stored}),
                                ("memory_get", {"id": stored})):
            is_error, text = await call(client, tool, arguments)
            assert is_error and "memory API error 404" in text, text

    run_in_process(env, scenario)
