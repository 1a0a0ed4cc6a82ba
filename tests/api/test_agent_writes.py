"""Who wrote it (finding F8): a write through an agent's key, or marked by the client as the
agent's (``X-Memory-Writer: agent``, what the MCP server sends), is ``assistant_inference``
and waits for review instead of activating at once; the header can only lower trust. A
runtime key writes with the trust of the user it acts for."""

from __future__ import annotations

import psycopg
import pytest

from tests.api.conftest import READ, WRITE, assert_error, bearer, row_counts, store

FACT = "The staging cluster is rebuilt every Sunday night."
AGENT = {"X-Memory-Writer": "agent"}


def _trust(database_url: str, memory_id: str) -> tuple[str, str, str]:
    """(source trust class, assertion status, review state) of a stored memory."""
    with psycopg.connect(database_url, autocommit=True) as connection:
        return connection.execute(
            "SELECT s.trust_class, a.status, a.review_state"
            "  FROM agent_memories m"
            "  JOIN agent_memory_sources s"
            "    ON s.instance_key = m.instance_key AND s.source_key = 'memory:' || m.id"
            "  JOIN agent_memory_assertions a"
            "    ON a.instance_key = m.instance_key AND a.id = m.assertion_id"
            " WHERE m.id = %s", (memory_id,)).fetchone()


@pytest.mark.parametrize("visibility", ["private", "team"])
def test_f8_a_write_through_an_agent_key_is_assistant_inference_and_not_active(
        client, make_key, database_url, visibility):
    agent = bearer(make_key("alice", (READ, WRITE), agent=True))
    created = store(client, agent, FACT, visibility=visibility)
    assert created["assertionStatus"] == "candidate"
    assert _trust(database_url, created["id"]) == ("assistant_inference", "candidate",
                                                   "pending")
    assert_error(client.get(f"/api/v1/memory/{created['id']}", headers=agent), 404)
    found = client.get("/api/v1/memory", params={"query": "staging cluster rebuilt"},
                       headers=agent)
    assert found.json()["results"] == []


def test_f8_the_agent_writer_header_lowers_a_user_keys_write(client, alice, database_url):
    created = client.post("/api/v1/memory", json={"content": FACT, "visibility": "team"},
                          headers={**alice, **AGENT})
    assert created.status_code == 201, created.text
    assert created.json()["assertionStatus"] == "candidate"
    assert _trust(database_url, created.json()["id"])[0] == "assistant_inference"


def test_f8_an_agents_repeat_does_not_activate_its_waiting_write(
        client, alice, database_url):
    agent_write = client.post("/api/v1/memory", json={"content": FACT},
                              headers={**alice, **AGENT}).json()
    again = client.post("/api/v1/memory", json={"content": FACT}, headers={**alice, **AGENT})
    assert again.status_code == 200 and again.json()["assertionStatus"] == "candidate"
    assert _trust(database_url, agent_write["id"])[1] == "candidate"


@pytest.mark.parametrize("value", ["human", "human_direct", "", "agent,human"])
def test_a_writer_header_that_is_not_agent_is_400_and_writes_nothing(client, alice,
                                                                      database_url, value):
    before = row_counts(database_url)
    error = assert_error(client.post("/api/v1/memory", json={"content": FACT},
                                     headers={**alice, "X-Memory-Writer": value}),
                         400, "validation_error")
    assert "X-Memory-Writer" in error["message"]
    assert row_counts(database_url) == before


def test_a_plain_user_write_stays_human_direct_and_active(client, alice, database_url):
    created = store(client, alice, FACT)
    assert created["assertionStatus"] == "active"
    assert _trust(database_url, created["id"]) == ("human_direct", "active", "policy_approved")


def test_a_runtime_write_follows_the_acting_user_unless_marked_as_the_agents(
        client, make_key, database_url):
    runtime = bearer(make_key(None, (READ, WRITE), runtime=True))
    for_alice = store(client, runtime, FACT, context={"userId": "alice"})
    assert for_alice["audience"] == {"kind": "private", "key": "alice"}
    assert _trust(database_url, for_alice["id"]) == ("human_direct", "active",
                                                     "policy_approved")

    inferred = client.post("/api/v1/memory", headers={**runtime, **AGENT}, json={
        "content": "Alice seems to prefer short answers.", "context": {"userId": "alice"}})
    assert inferred.status_code == 201, inferred.text
    assert _trust(database_url, inferred.json()["id"])[:2] == ("assistant_inference",
                                                              "candidate")

    system = store(client, runtime, "The office closes on public holidays.",
                   visibility="workspace")
    assert _trust(database_url, system["id"])[:2] == ("automation", "candidate")
