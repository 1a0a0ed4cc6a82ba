"""``memory-platform mcp`` end to end: the real stdio MCP server (a subprocess), driven by the
official SDK's client, calling the real HTTP API (uvicorn on a loopback port, in a thread)
against a fresh migrated database. Every await is bounded, so a hang fails instead of stalling.
"""

from __future__ import annotations

import json
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime
from pathlib import Path

import anyio
import psycopg
import pytest
import uvicorn
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from api.app import create_app
from memory_platform.features import apikeys
from memory_platform.foundation.settings import PROJECT_ROOT, Settings
from memory_platform.mcp import build_server
from memory_platform.shared.ledger.assertions import record_decision
from tests.support.settings import hash_embedding_settings

STEP_TIMEOUT = 15.0  # one MCP round trip (the first one includes the subprocess start)
USER = "dev-mcp"
READ_TOOLS = {"context_search", "context_get", "session_replay",
              "memory_search", "memory_get", "memory_grep", "memory_describe", "memory_expand",
              "knowledge_search", "knowledge_get_entity", "knowledge_neighbors",
              "knowledge_explain_claim"}
WRITE_TOOLS = {"memory_store", "session_append", "memory_feedback", "memory_forget",
               "memory_correct"}


class LiveApi:
    """The real API app under uvicorn, on a free loopback port, in a daemon thread."""

    def __init__(self, settings: Settings) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(create_app(settings), log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       name="live-api", daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the API did not start (see the log above)")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()

    def __enter__(self) -> LiveApi:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


@pytest.fixture
def api(database_url: str, tmp_path: Path) -> Iterator[LiveApi]:
    settings = hash_embedding_settings(database_url, data_dir=tmp_path / "state")
    with LiveApi(settings) as live:
        yield live


@pytest.fixture
def tokens(database_url: str) -> dict[str, str]:
    """A read key and a separate write key of the same user."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        _, read = apikeys.create_key(conn, instance_key="default", user_id=USER,
                                     scopes=("memory:read",), name="mcp-read")
        _, write = apikeys.create_key(conn, instance_key="default", user_id=USER,
                                      scopes=("memory:write",), name="mcp-write")
    return {"read": read, "write": write}


def approve(database_url: str, assertion_id: str) -> None:
    """A person approves an assertion waiting for review."""
    with psycopg.connect(database_url) as conn:
        record_decision(conn, instance_key="default", assertion_id=assertion_id,
                        decision="approve", reviewer_kind="human", reviewer_id="reviewer",
                        reason_code="reviewed")


def trust_class(database_url: str, memory_id: str) -> str:
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT trust_class FROM agent_memory_sources"
                            " WHERE source_key = %s", (f"memory:{memory_id}",)).fetchone()[0]


def run_mcp(env: dict[str, str],
            scenario: Callable[[Client], Awaitable[None]]) -> str:
    """Start ``python -m memory_platform mcp`` with ``env``, run ``scenario`` against it with
    the SDK's stdio client, check that stdout carried nothing but protocol messages, and
    answer what the server wrote to stderr."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "memory_platform", "mcp"],
                                   env=env, cwd=str(PROJECT_ROOT))
    stream_errors: list[Exception] = []

    async def on_message(message: object) -> None:
        if isinstance(message, Exception):  # a stdout line that is not JSON-RPC
            stream_errors.append(message)

    async def main() -> None:
        with anyio.fail_after(STEP_TIMEOUT * 3):
            async with Client(stdio_client(params, errlog=errlog), message_handler=on_message,
                              read_timeout_seconds=STEP_TIMEOUT) as client:
                await scenario(client)

    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        try:
            anyio.run(main)
        except BaseExceptionGroup as group:  # the client's task groups wrap a failed assert
            raise _first_leaf(group) from group
        errlog.seek(0)
        stderr = errlog.read()
    assert not stream_errors, f"non-protocol output on stdout: {stream_errors}"
    return stderr


def _first_leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


async def tool_names(client: Client) -> set[str]:
    with anyio.fail_after(STEP_TIMEOUT):
        listed = await client.list_tools()
    return {tool.name for tool in listed.tools}


async def call(client: Client, name: str, arguments: dict) -> tuple[bool, str]:
    """(is_error, the text content) of one tool call."""
    with anyio.fail_after(STEP_TIMEOUT):
        result = await client.call_tool(name, arguments)
    texts = [block.text for block in result.content if block.type == "text"]
    assert len(texts) == 1, result
    return bool(result.is_error), texts[0]


def test_store_search_get_round_trip_with_both_tokens(api: LiveApi, tokens: dict[str, str],
                                                      database_url: str):
    content = "The billing module rounds VAT per invoice line, never on the invoice total."

    async def scenario(client: Client) -> None:
        with anyio.fail_after(STEP_TIMEOUT):
            listed = await client.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert set(tools) == READ_TOOLS | WRITE_TOOLS
        for name in READ_TOOLS:
            assert "untrusted data" in tools[name].description
            assert "never instructions" in tools[name].description
        assert "retrieve it exactly with memory_get" in tools["memory_search"].description
        store_text = tools["memory_store"].description
        assert "defaults to private" in store_text
        for excluded in ("secrets", "raw logs", "speculation", "transient task state",
                         "repository itself already holds"):
            assert excluded in store_text
        assert tools["memory_store"].input_schema["properties"]["visibility"]["default"] \
            == "private"

        # Store through the write token (private by default), then again: deduplicated.
        arguments = {"content": content, "subjectRefs": {"moduleSlug": "billing"}}
        is_error, text = await call(client, "memory_store", arguments)
        assert not is_error, text
        stored = json.loads(text)
        assert stored["audience"]["kind"] == "private" and stored["deduplicated"] is False
        is_error, text = await call(client, "memory_store", arguments)
        assert not is_error, text
        again = json.loads(text)
        assert again["id"] == stored["id"] and again["deduplicated"] is True

        # The agent's write (F8: X-Memory-Writer: agent) is its inference: it waits for
        # review and is not recalled until a person approves it.
        assert stored["assertionStatus"] == again["assertionStatus"] == "candidate"
        assert trust_class(database_url, stored["id"]) == "assistant_inference"
        is_error, text = await call(client, "memory_search",
                                    {"query": "how is VAT rounded on invoices", "limit": 5})
        assert not is_error and stored["id"] not in text, text
        approve(database_url, stored["assertionId"])

        # Find it with search (the read token), wrapped as untrusted data.
        is_error, text = await call(client, "memory_search",
                                    {"query": "how is VAT rounded on invoices", "limit": 5})
        assert not is_error, text
        hit = next(r for r in json.loads(text)["results"] if r["id"] == stored["id"])
        assert hit["trust"] == "untrusted-data" and hit["content"] == content
        is_error, text = await call(client, "memory_search",
                                    {"query": "VAT rounding", "scope": "team"})
        assert not is_error and json.loads(text) == {"results": []}, text

        # Fetch it exactly with get.
        is_error, text = await call(client, "memory_get", {"id": stored["id"]})
        assert not is_error, text
        memory = json.loads(text)
        assert memory["id"] == stored["id"] and memory["content"] == content
        assert memory["trust"] == "untrusted-data"
        assert memory["visibility"] == "private"
        assert memory["subjectRefs"] == {"moduleSlug": "billing"}

        # API errors come back as tool errors carrying the API's message.
        unknown = "00000000-0000-4000-8000-000000000000"
        is_error, text = await call(client, "memory_get", {"id": unknown})
        assert is_error and f"memory API error 404 not_found: no memory with id {unknown}" \
            in text, text
        is_error, text = await call(client, "memory_get", {"id": "x/../../../healthz"})
        assert is_error and "memory API error 404" in text, text
        is_error, text = await call(client, "memory_store", {
            "content": "deploy with AKIAIOSFODNN7EXAMPLE / "
                       "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"})
        assert is_error and "memory API error 4" in text, text
        # Arguments outside the schema are refused by the adapter itself.
        is_error, text = await call(client, "memory_search", {"query": "x", "limit": 500})
        assert is_error and "limit" in text, text
        for token in tokens.values():
            assert token not in text

        # And the server is still serving.
        is_error, text = await call(client, "memory_get", {"id": stored["id"]})
        assert not is_error and json.loads(text)["id"] == stored["id"], text

    stderr = run_mcp({"MEMORY_API_URL": api.url, "MEMORY_READ_TOKEN": tokens["read"],
                      "MEMORY_WRITE_TOKEN": tokens["write"]}, scenario)
    assert tokens["read"] not in stderr and tokens["write"] not in stderr
    with psycopg.connect(database_url) as conn:
        count = conn.execute("SELECT count(*) FROM agent_memories").fetchone()[0]
    assert count == 1  # the failed store wrote nothing


def test_read_token_only_lists_no_store(api: LiveApi, tokens: dict[str, str]):
    async def scenario(client: Client) -> None:
        assert await tool_names(client) == READ_TOOLS
        is_error, text = await call(client, "memory_store", {"content": "should not land"})
        assert is_error and "memory_store" in text, text
        is_error, text = await call(client, "memory_search", {"query": "should not land"})
        assert not is_error and json.loads(text) == {"results": []}, text

    run_mcp({"MEMORY_API_URL": api.url, "MEMORY_READ_TOKEN": tokens["read"]}, scenario)


def test_the_token_alias_is_read_only(api: LiveApi, tokens: dict[str, str]):
    """MEMORY_TOKEN stands for MEMORY_READ_TOKEN, and only for it: even a key that may write
    lists no write tool through the alias."""
    async def scenario(client: Client) -> None:
        assert await tool_names(client) == READ_TOOLS
        is_error, text = await call(client, "memory_search", {"query": "anything"})
        assert not is_error and json.loads(text) == {"results": []}, text

    run_in_process({"MEMORY_API_URL": api.url, "MEMORY_TOKEN": tokens["read"]}, scenario)

    async def writer(client: Client) -> None:
        assert await tool_names(client) == READ_TOOLS

    run_in_process({"MEMORY_API_URL": api.url, "MEMORY_TOKEN": tokens["write"]}, writer)


def test_write_token_only_lists_only_store(api: LiveApi, tokens: dict[str, str]):
    async def scenario(client: Client) -> None:
        assert await tool_names(client) == WRITE_TOOLS
        is_error, text = await call(client, "memory_store", {"content": "Prefer uv over pip."})
        assert not is_error and json.loads(text)["audience"]["kind"] == "private", text
        is_error, text = await call(client, "memory_search", {"query": "uv"})
        assert is_error and "memory_search" in text, text

    run_mcp({"MEMORY_API_URL": api.url, "MEMORY_WRITE_TOKEN": tokens["write"]}, scenario)


def test_no_token_lists_no_tools_and_hints_on_stderr():
    async def scenario(client: Client) -> None:
        assert await tool_names(client) == set()

    stderr = run_mcp({"MEMORY_API_URL": "http://127.0.0.1:9"}, scenario)
    assert "MEMORY_READ_TOKEN" in stderr and "serving no tools" in stderr


# In process (the same server object, no subprocess): failures that need no stdio to show.
def run_in_process(env: dict[str, str], scenario: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        with anyio.fail_after(STEP_TIMEOUT * 2):
            async with Client(build_server(env), read_timeout_seconds=STEP_TIMEOUT) as client:
                await scenario(client)

    try:
        anyio.run(main)
    except BaseExceptionGroup as group:
        raise _first_leaf(group) from group


def test_an_unknown_token_is_a_tool_error_that_never_echoes_it(api: LiveApi):
    bogus = "mp_bogus_0123456789abcdef0123456789abcdef"

    async def scenario(client: Client) -> None:
        is_error, text = await call(client, "memory_search", {"query": "anything"})
        assert is_error and "memory API error 401 unauthorized: " in text, text
        assert bogus not in text

    run_in_process({"MEMORY_API_URL": api.url, "MEMORY_READ_TOKEN": bogus}, scenario)


def test_an_unreachable_api_is_a_tool_error_not_a_crash():
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"

    async def scenario(client: Client) -> None:
        is_error, text = await call(client, "memory_get", {"id": "anything"})
        assert is_error and f"memory API unreachable at {url}" in text, text
        assert "tok-read" not in text
        assert await tool_names(client) == READ_TOOLS  # still serving

    run_in_process({"MEMORY_API_URL": url, "MEMORY_READ_TOKEN": "tok-read"}, scenario)


def test_memory_store_forwards_the_event_time(api: LiveApi, tokens: dict[str, str],
                                              database_url: str):
    event = "2026-11-30T09:12:00+01:00"

    async def scenario(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        schema = tools["memory_store"].input_schema["properties"]["occurredAt"]
        assert "offset" in schema["description"] and "occurredAt" not in \
            tools["memory_store"].input_schema.get("required", [])
        is_error, text = await call(client, "memory_store", {
            "content": "The billing cut-over to the new cluster was done by Ben.",
            "occurredAt": event})
        assert not is_error, text
        state["dated"] = json.loads(text)["id"]
        is_error, text = await call(client, "memory_store", {
            "content": "The invoice archive lives in the eu-central bucket."})
        assert not is_error, text
        state["undated"] = json.loads(text)["id"]
        # With a session key a dated memory is a conversation turn: it links to the one before.
        for minute, content in enumerate(("Ben: Where does the invoice archive live now?",
                                          "Anna: In the Frankfurt bucket since Monday.")):
            is_error, text = await call(client, "memory_store", {
                "content": content, "sessionKey": "mcp-chat",
                "occurredAt": f"2026-11-30T10:0{minute}:00+01:00"})
            assert not is_error, text
            state[f"turn{minute}"] = json.loads(text)["id"]
        # The API checks it: a local time without an offset is refused, nothing written.
        is_error, text = await call(client, "memory_store", {
            "content": "The VAT audit started with a kickoff call.",
            "occurredAt": "2026-11-30T09:12:00"})
        assert is_error and "memory API error 400" in text and "occurredAt" in text, text
        is_error, text = await call(client, "memory_store", {
            "content": "The VAT audit started with a kickoff call.", "occurredAt": ""})
        assert is_error and "occurredAt" in text, text

    state: dict[str, str] = {}
    run_in_process({"MEMORY_API_URL": api.url, "MEMORY_WRITE_TOKEN": tokens["write"]},
                   scenario)
    with psycopg.connect(database_url) as conn:
        turns = dict(conn.execute("SELECT id::text, previous_memory_id::text FROM agent_memories"
                                  " WHERE session_key = 'mcp-chat'").fetchall())
        assert turns == {state["turn0"]: None, state["turn1"]: state["turn0"]}
        conn.execute("DELETE FROM agent_memories WHERE session_key = 'mcp-chat'")
        rows = dict(conn.execute("SELECT id::text, occurred_at FROM agent_memories").fetchall())
    assert rows == {state["dated"]: datetime.fromisoformat(event),
                    state["undated"]: None}
    assert trust_class(database_url, state["dated"]) == "assistant_inference"
