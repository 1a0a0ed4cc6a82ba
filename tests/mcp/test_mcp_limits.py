"""The MCP tools keep no defaults of their own: a search without ``limit`` sends none, so the
API answers with the server's settings (``MEMORY_RETRIEVAL_TOP_K``,
``MEMORY_GRAPH_SEARCH_LIMIT``), and no tool schema shows a number the server may not use.
In process with the official SDK's client, against the real HTTP API over a fresh database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from mcp.client import Client
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb

from memory_platform.features import apikeys
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider
from tests.db import rows
from tests.graph import knowledge_rows as kr
from tests.mcp.test_mcp_e2e import LiveApi, call, run_in_process
from tests.support.settings import hash_embedding_settings

USER = "dev-mcp-limits"
TOP_K = 3
GRAPH_LIMIT = 1
BILLING = [f"The billing service rounds invoice {n} per line, never on the total."
           for n in range(5)]
CLAIMS = [f"Elbtal Software ships billing release {n}." for n in range(3)]


@pytest.fixture
def live(database_url: str, tmp_path: Path) -> Iterator[LiveApi]:
    with LiveApi(hash_embedding_settings(database_url, data_dir=tmp_path / "state",
                                          retrieval_top_k=TOP_K,
                                          graph_search_limit=GRAPH_LIMIT)) as api:
        yield api


@pytest.fixture
def env(live: LiveApi, database_url: str) -> dict[str, str]:
    """A read token over five recallable memories of the user and three graph claims."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        _, read = apikeys.create_key(conn, instance_key="default", user_id=USER,
                                     scopes=("memory:read",), name="mcp-read")
        _, write = apikeys.create_key(conn, instance_key="default", user_id=USER,
                                      scopes=("memory:write",), name="writer")
        register_vector(conn)
        told = rows.assertion(conn, "default", status="active", review_state="human_approved",
                              assertion_text="Elbtal Software ships the billing service.")
        elbtal = kr.entity(conn, "default", "Elbtal Software")
        for text in CLAIMS:
            claim = kr.claim(conn, "default", elbtal, text, predicate="ships",
                             source_refs=Jsonb([{"assertionId": str(told)}]))
            kr.embed(conn, "default", HashEmbeddingProvider(1536), "claim", claim, text)
    with httpx.Client(base_url=live.url, timeout=30,
                      headers={"Authorization": f"Bearer {write}"}) as http:
        for content in BILLING:   # the user's own statements: active at once
            response = http.post("/api/v1/memory", json={"content": content})
            assert response.status_code == 201, response.text
            assert response.json()["assertionStatus"] == "active", response.text
    return {"MEMORY_API_URL": live.url, "MEMORY_READ_TOKEN": read}


LIMITED_TOOLS = ("memory_search", "memory_grep", "memory_expand", "knowledge_search",
                 "knowledge_neighbors")


def test_no_tool_schema_copies_a_server_default(env: dict[str, str]):
    async def scenario(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in LIMITED_TOOLS:
            limit = tools[name].input_schema["properties"]["limit"]
            assert limit.get("default") is None, (name, limit)
            assert "limit" not in tools[name].input_schema.get("required", [])
        assert "MEMORY_RETRIEVAL_TOP_K" in json.dumps(
            tools["memory_search"].input_schema["properties"]["limit"])
        assert "MEMORY_GRAPH_SEARCH_LIMIT" in json.dumps(
            tools["knowledge_search"].input_schema["properties"]["limit"])

    run_in_process(env, scenario)


def test_memory_search_without_a_limit_answers_the_servers_top_k(env: dict[str, str]):
    async def scenario(client: Client) -> None:
        is_error, text = await call(client, "memory_search",
                                    {"query": "how does billing round invoices"})
        assert not is_error, text
        assert len(json.loads(text)["results"]) == TOP_K
        # More are there: an explicit limit still reaches them.
        is_error, text = await call(client, "memory_search",
                                    {"query": "how does billing round invoices", "limit": 5})
        assert not is_error, text
        assert len(json.loads(text)["results"]) == len(BILLING)

    run_in_process(env, scenario)


def test_knowledge_search_without_a_limit_answers_the_servers_graph_limit(
        env: dict[str, str]):
    async def scenario(client: Client) -> None:
        is_error, text = await call(client, "knowledge_search",
                                    {"query": "Which billing release does Elbtal ship?"})
        assert not is_error, text
        assert len(json.loads(text)["claims"]) == GRAPH_LIMIT
        is_error, text = await call(client, "knowledge_search",
                                    {"query": "Which billing release does Elbtal ship?",
                                     "limit": 8})
        assert not is_error, text
        assert len(json.loads(text)["claims"]) == len(CLAIMS)

    run_in_process(env, scenario)
