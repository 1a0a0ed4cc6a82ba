"""A key sees as its own user in its own instance, always: another user's private memory is
invisible whatever conversation context the request adds (even when both users belong to that
channel, room and session), another instance does not exist, and an invisible id answers
exactly like an id that never existed."""

from __future__ import annotations

import uuid

import pytest

from tests.api.conftest import (
    ALL_SCOPES,
    add_member,
    assert_error,
    bearer,
    join_session,
    store,
)

CONTEXT = {"sessionKey": "session-42", "channelThreadKey": "slack:C1:T9",
           "groupRoomId": "room-7", "channelType": "slack"}
SECRET_FACT = "Alice keeps her allergy notes about hazelnuts in the blue folder."


@pytest.fixture
def bob(make_key) -> dict[str, str]:
    return bearer(make_key("bob", ALL_SCOPES))


@pytest.fixture
def same_conversation(database_url) -> None:
    """Alice and bob both belong to CONTEXT's channel thread, room and session."""
    for channel in (CONTEXT["channelThreadKey"], CONTEXT["groupRoomId"]):
        add_member(database_url, channel, "alice", "bob")
    join_session(database_url, CONTEXT["sessionKey"], "alice", "bob")


@pytest.mark.usefixtures("same_conversation")
def test_a_private_memory_is_invisible_to_another_user_with_the_same_context(client, alice,
                                                                           bob):
    created = store(client, alice, SECRET_FACT, explicitPrivate=True, context=CONTEXT)
    assert created["audience"] == {"kind": "private", "key": "alice"}

    as_alice = client.get("/api/v1/memory", params={"query": "allergy hazelnuts", **CONTEXT},
                          headers=alice)
    assert created["id"] in [r["id"] for r in as_alice.json()["results"]]

    as_bob = client.get("/api/v1/memory", params={"query": "allergy hazelnuts", **CONTEXT},
                        headers=bob)
    assert as_bob.status_code == 200 and as_bob.json()["results"] == []
    assert_error(client.get(f"/api/v1/memory/{created['id']}", headers=bob), 404, "not_found")


@pytest.mark.usefixtures("same_conversation")
def test_a_private_memory_is_invisible_to_another_user_through_the_context_facade(
        client, alice, bob):
    created = store(client, alice, SECRET_FACT, explicitPrivate=True, context=CONTEXT)
    search = client.post("/api/v1/context/search",
                         json={"query": "allergy hazelnuts blue folder", "context": CONTEXT},
                         headers=bob)
    assert search.status_code == 200 and search.json()["results"] == []
    for item in (f"memory:{created['id']}", f"assertion:{created['assertionId']}"):
        assert_error(client.get(f"/api/v1/context/{item}", headers=bob), 404, "not_found")


def test_a_team_memory_is_shared_but_stays_attributed_to_its_writer(client, alice, bob):
    created = store(client, alice, "The office wifi is called Gaia-5G.", visibility="team")
    assert created["audience"] == {"kind": "team", "key": "default"}
    found = client.get(f"/api/v1/memory/{created['id']}", headers=bob)
    assert found.status_code == 200
    assert found.json()["visibility"] == "team"


def test_a_key_never_sees_another_instance(client, make_key):
    acme = bearer(make_key("alice", ALL_SCOPES, instance="acme"))
    acme_colleague = bearer(make_key("bob", ALL_SCOPES, instance="acme"))
    other = bearer(make_key("alice", ALL_SCOPES, instance="globex"))
    created = store(client, acme, "The acme warehouse opens at six.", visibility="team")
    assert client.get(f"/api/v1/memory/{created['id']}",
                      headers=acme_colleague).status_code == 200

    search = client.get("/api/v1/memory", params={"query": "acme warehouse opens"},
                        headers=other)
    assert search.status_code == 200 and search.json()["results"] == []
    assert_error(client.get(f"/api/v1/memory/{created['id']}", headers=other), 404)
    context = client.post("/api/v1/context/search", json={"query": "acme warehouse opens"},
                          headers=other)
    assert context.status_code == 200 and context.json()["results"] == []
    assert_error(client.get(f"/api/v1/context/assertion:{created['assertionId']}",
                            headers=other), 404)
    status = client.get("/internal/memory/status", headers=other).json()
    assert status["instance"] == "globex" and status["memories"]["byVisibility"] == {}


def test_an_invisible_id_answers_exactly_like_a_missing_id(client, alice, bob):
    created = store(client, alice, SECRET_FACT, explicitPrivate=True)
    missing = str(uuid.uuid4())
    for path in ("/api/v1/memory/{}", "/api/v1/context/memory:{}"):
        invisible = client.get(path.format(created["id"]), headers=bob)
        absent = client.get(path.format(missing), headers=bob)
        assert invisible.status_code == absent.status_code == 404
        assert invisible.headers["content-type"] == absent.headers["content-type"]
        hidden = invisible.json()["error"]
        unknown = absent.json()["error"]
        assert hidden["code"] == unknown["code"] and hidden["details"] == unknown["details"]
        assert hidden["message"].replace(created["id"], "ID") == \
            unknown["message"].replace(missing, "ID")


def test_an_invisible_assertion_id_answers_exactly_like_a_missing_one(client, alice, bob):
    created = store(client, alice, SECRET_FACT, explicitPrivate=True)
    missing = str(uuid.uuid4())
    invisible = client.get(f"/api/v1/context/assertion:{created['assertionId']}", headers=bob)
    absent = client.get(f"/api/v1/context/assertion:{missing}", headers=bob)
    assert invisible.status_code == absent.status_code == 404
    assert invisible.json()["error"]["message"].replace(created["assertionId"], "ID") == \
        absent.json()["error"]["message"].replace(missing, "ID")
