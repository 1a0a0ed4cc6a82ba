"""The knowledge-graph tools of the MCP server (knowledge_search, knowledge_get_entity,
knowledge_neighbors, knowledge_explain_claim), in process with the official SDK's client,
against the real HTTP API (uvicorn on a loopback port) over a fresh migrated database."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

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

USER = "dev-mcp"
TOOLS = ("knowledge_search", "knowledge_get_entity", "knowledge_neighbors",
         "knowledge_explain_claim")


@pytest.fixture
def live(database_url: str, tmp_path: Path) -> Iterator[LiveApi]:
    with LiveApi(hash_embedding_settings(database_url, data_dir=tmp_path / "state")) as api:
        yield api


@pytest.fixture
def graph(database_url: str) -> dict[str, uuid.UUID]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        register_vector(conn)
        told = rows.assertion(conn, "default", status="active", review_state="human_approved",
                              assertion_text="Elbtal Software ships the billing service.")
        elbtal = kr.entity(conn, "default", "Elbtal Software")
        billing = kr.entity(conn, "default", "Billing service")
        claim = kr.claim(conn, "default", elbtal, "Elbtal Software ships the billing service.",
                         predicate="ships", object_entity_id=billing, value=None,
                         source_refs=Jsonb([{"assertionId": str(told)}]))
        edge = kr.edge(conn, "default", elbtal, billing, relation="maintains")
        kr.embed(conn, "default", HashEmbeddingProvider(1536), "claim", claim,
                 "Elbtal Software ships the billing service.")
        private = kr.entity(conn, "default", "Elbtal private", kind="private", key="someone")
    return {"elbtal": elbtal, "billing": billing, "claim": claim, "edge": edge,
            "private": private}


@pytest.fixture
def env(live: LiveApi, database_url: str) -> dict[str, str]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        _, read = apikeys.create_key(conn, instance_key="default", user_id=USER,
                                     scopes=("memory:read",), name="mcp-read")
    return {"MEMORY_API_URL": live.url, "MEMORY_READ_TOKEN": read}


def test_the_four_knowledge_tools_end_to_end(env: dict[str, str], graph):
    async def scenario(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in TOOLS:
            assert "untrusted data" in tools[name].description
            assert tools[name].annotations.read_only_hint is True

        is_error, text = await call(client, "knowledge_search",
                                    {"query": "Who ships the billing service?"})
        assert not is_error, text
        body = json.loads(text)
        assert body["trust"] == "untrusted-data" and not body["lexicalOnly"]
        assert [c["id"] for c in body["claims"]] == [str(graph["claim"])]
        assert body["claims"][0]["object"] == "Billing service"
        assert str(graph["edge"]) in {e["id"] for e in body["edges"]}
        assert body["block"].startswith("Structured knowledge graph")

        is_error, text = await call(client, "knowledge_get_entity",
                                    {"id": str(graph["elbtal"])})
        assert not is_error, text
        assert [c["id"] for c in json.loads(text)["claims"]["asSubject"]] == [
            str(graph["claim"])]

        is_error, text = await call(client, "knowledge_neighbors",
                                    {"id": str(graph["elbtal"]), "depth": 2})
        assert not is_error, text
        assert [n["label"] for n in json.loads(text)["neighbors"]] == ["Billing service"]

        is_error, text = await call(client, "knowledge_explain_claim",
                                    {"id": f"claim:{graph['claim']}"})
        assert not is_error, text
        explained = json.loads(text)
        assert explained["supported"] and explained["sourceRefs"][0]["supported"]

        is_error, text = await call(client, "knowledge_get_entity",
                                    {"id": str(graph["private"])})
        assert is_error and "memory API error 404 not_found" in text, text
        is_error, text = await call(client, "knowledge_explain_claim", {"id": "nope"})
        assert is_error and "memory API error 400" in text, text

    run_in_process(env, scenario)
