"""Only people review (issue 28, finding 4) and review texts hold no secrets (finding 6),
through the HTTP API.

* An agent or runtime key cannot be given ``memory:review`` or ``admin`` (refused at
  creation); even a key row forced past the database's CHECK cannot decide (403
  ``person_required``), on every review route of the API and the inspector.
* Four eyes: a person does not alone approve a team or workspace fact backed only by their
  own writes or their agent's (403 ``own_evidence``, nothing changes); another reviewer does.
  Their own private candidate is theirs to approve.
* A decision note or a wiki reason holding a credential is refused like a write (422
  ``credential_detected``) and nothing changes.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid

import psycopg
import pytest

from memory_platform.features import apikeys
from memory_platform.features.consolidation import lifecycle
from memory_platform.foundation.errors import InvalidInput
from tests.api.conftest import READ, REVIEW, WRITE, assert_error, bearer, store
from tests.inspector.support import sign_in

JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")
# The review's repro: an agent's inference that must not become a team fact on its own word.
INFERENCE = "Invoices above 10k EUR go to the finance approvals desk on the third floor."


@pytest.fixture
def conn(database_url: str):
    with psycopg.connect(database_url, autocommit=True) as connection:
        yield connection


def forced_key(database_url: str, user: str | None, scopes: tuple[str, ...], *,
               agent: bool = False) -> dict[str, str]:
    """Headers of a key row the CHECK of migration 0028 would refuse (an agent key when
    ``agent``, a runtime key when ``user`` is None), as a database changed by hand would
    hold it: the test's own database loses the CHECK."""
    public = "mpk_" + secrets.token_hex(6)
    token = f"{public}_{secrets.token_urlsafe(32)}"
    granted = [*scopes, *([] if user else [apikeys.RUNTIME_SCOPE])]
    with psycopg.connect(database_url) as connection:
        connection.execute("ALTER TABLE api_keys"
                           " DROP CONSTRAINT IF EXISTS api_keys_person_scopes_check")
        connection.execute(
            "INSERT INTO api_keys (instance_key, user_id, token_prefix, token_hash, scopes,"
            " agent) VALUES ('default', %s, %s, %s, %s, %s)",
            (user, public, hashlib.sha256(token.encode()).hexdigest(), granted, agent))
        connection.commit()
    return bearer(token)


def assertion_state(conn, assertion_id: str) -> tuple[str, str]:
    return conn.execute("SELECT status, review_state FROM agent_memory_assertions"
                        " WHERE id = %s", (assertion_id,)).fetchone()


def review_rows(conn) -> list[tuple]:
    return conn.execute("SELECT assertion_id, decision, reviewer_kind, reviewer_id, note"
                        " FROM agent_memory_assertion_reviews ORDER BY id").fetchall()


def recalled(client, headers, query: str) -> list[str]:
    response = client.get("/api/v1/memory", params={"query": query}, headers=headers)
    assert response.status_code == 200, response.text
    return [h["content"] for h in response.json()["results"]]


@pytest.mark.parametrize("kind", ["agent", "runtime"])
def test_f4_an_agent_or_runtime_key_is_refused_memory_review_at_creation(database_url, kind):
    with psycopg.connect(database_url) as connection:
        with pytest.raises(InvalidInput) as refused:
            apikeys.create_key(connection, instance_key="default",
                               user_id="carol" if kind == "agent" else None,
                               scopes=(READ, WRITE, REVIEW), agent=kind == "agent",
                               runtime=kind == "runtime")
        assert refused.value.code == "person_scope"
        assert refused.value.details["personOnly"] == [REVIEW]
        assert connection.execute("SELECT count(*) FROM api_keys").fetchone()[0] == 0


def test_f4_an_agent_key_cannot_approve_its_own_inference_even_if_its_row_is_forced(
        client, conn, database_url, make_key):
    """The review's repro: carol's agent writes a team inference (candidate) and approves it
    with its own key. The decision is 403 on every route and changes nothing; a person
    (rita) approves it and bob recalls it."""
    agent = forced_key(database_url, "carol", (READ, WRITE, REVIEW), agent=True)
    runtime = forced_key(database_url, None, (READ, WRITE, REVIEW))
    created = store(client, agent, INFERENCE, visibility="team")
    assert created["assertionStatus"] == "candidate"
    ident = created["assertionId"]
    bob = bearer(make_key("bob", (READ, WRITE)))
    question = "where do invoices above 10k EUR go"
    assert recalled(client, bob, question) == []

    other = store(client, bearer(make_key("dan", (READ, WRITE))),
                  "Invoices above 10k EUR go to the finance desk.",
                  visibility="team")["assertionId"]
    with conn.transaction():
        conflict = lifecycle.open_conflict(conn, "default", uuid.UUID(ident), uuid.UUID(other),
                                           detected_by="human", reason="same slot")
        wiki = conn.execute(
            "INSERT INTO wiki_change_proposals (instance_key, audience_kind, audience_key,"
            " page_slug, title, body_markdown) VALUES ('default', 'team', 'default',"
            " 'finance/invoices', 'Invoices', 'Body') RETURNING id").fetchone()[0]
    before = (assertion_state(conn, ident), review_rows(conn))
    for headers, kind in ((agent, "agent"), (runtime, "runtime")):
        for url, body in (
                (f"/api/v1/review/assertions/{ident}/decision", {"decision": "approve"}),
                ("/api/v1/review/assertions/bulk", {"decision": "approve"}),
                (f"/api/v1/review/conflicts/{conflict}/resolution", {"action": "keep_both"}),
                (f"/api/v1/review/wiki/{wiki}/decision", {"decision": "approve"})):
            error = assert_error(client.post(url, json=body, headers=headers), 403,
                                 "person_required")
            assert error["details"] == {"keyKind": kind}
    assert (assertion_state(conn, ident), review_rows(conn)) == before
    assert conn.execute("SELECT state FROM wiki_change_proposals WHERE id = %s",
                        (wiki,)).fetchone() == ("draft",)

    # The inspector's review actions go through the same rule.
    csrf = sign_in(client, agent["Authorization"].split()[1])
    assert_error(client.post(f"/inspector/api/review/assertions/{ident}",
                             json={"decision": "approve"}, headers={"X-CSRF-Token": csrf}),
                 403, "person_required")
    client.cookies.clear()
    assert (assertion_state(conn, ident), review_rows(conn)) == before

    rita = bearer(make_key("rita", (READ, REVIEW)))
    decided = client.post(f"/api/v1/review/assertions/{ident}/decision",
                          json={"decision": "approve"}, headers=rita)
    assert decided.status_code == 200, decided.text
    assert review_rows(conn)[-1][1:4] == ("approve", "human", "rita")
    assert INFERENCE in recalled(client, bob, question)


@pytest.mark.parametrize("visibility", ["team", "workspace"])
def test_f4_a_person_cannot_alone_approve_a_fact_only_their_own_writes_back(
        client, conn, make_key, visibility):
    """Carol's own team inference (through her agent key) and her own workspace statement
    wait for review; carol cannot approve either alone, singly, in bulk or by keeping both
    sides of a conflict, and nothing changes. Rita approves."""
    carol = bearer(make_key("carol", (READ, WRITE, REVIEW)))
    writer = (bearer(make_key("carol", (READ, WRITE), agent=True)) if visibility == "team"
              else carol)
    created = store(client, writer, INFERENCE, visibility=visibility)
    assert created["assertionStatus"] == "candidate"
    ident = created["assertionId"]
    sibling = store(client, writer, "Invoices below 10k EUR go to the team lead.",
                    visibility=visibility)["assertionId"]
    with conn.transaction():
        conflict = lifecycle.open_conflict(conn, "default", uuid.UUID(ident),
                                           uuid.UUID(sibling), detected_by="human",
                                           reason="same slot")
    before = (assertion_state(conn, ident), review_rows(conn))

    error = assert_error(client.post(f"/api/v1/review/assertions/{ident}/decision",
                                     json={"decision": "approve"}, headers=carol),
                         403, "own_evidence")
    assert error["details"] == {"assertionId": ident}
    bulk = client.post("/api/v1/review/assertions/bulk", json={"decision": "approve"},
                       headers=carol)
    assert bulk.status_code == 200, bulk.text
    assert bulk.json()["decided"] == [] and bulk.json()["projected"] == 0
    assert {r["id"] for r in bulk.json()["refused"]} == {ident, sibling}
    assert {r["code"] for r in bulk.json()["refused"]} == {"own_evidence"}
    assert_error(client.post(f"/api/v1/review/conflicts/{conflict}/resolution",
                             json={"action": "keep_both"}, headers=carol), 403, "own_evidence")
    csrf = sign_in(client, carol["Authorization"].split()[1])
    assert_error(client.post(f"/inspector/api/review/assertions/{ident}",
                             json={"decision": "approve"}, headers={"X-CSRF-Token": csrf}),
                 403, "own_evidence")
    client.cookies.clear()
    assert (assertion_state(conn, ident), review_rows(conn)) == before
    assert conn.execute("SELECT status FROM agent_memory_assertion_conflicts WHERE id = %s",
                        (conflict,)).fetchone() == ("open",)

    # Rejecting one's own fact needs no second pair of eyes.
    rejected = client.post(f"/api/v1/review/assertions/{sibling}/decision",
                           json={"decision": "reject"}, headers=carol)
    assert rejected.status_code == 200, rejected.text

    rita = bearer(make_key("rita", (READ, REVIEW)))
    approved = client.post(f"/api/v1/review/assertions/{ident}/decision",
                           json={"decision": "approve"}, headers=rita)
    assert approved.status_code == 200, approved.text
    assert assertion_state(conn, ident) == ("active", "human_approved")
    assert INFERENCE in recalled(client, bearer(make_key("bob", (READ,))),
                                 "where do invoices above 10k EUR go")


def test_f4_a_person_approves_their_own_private_candidate(client, conn, make_key):
    """A private fact is only its owner's: carol approves what her agent inferred for her."""
    carol = bearer(make_key("carol", (READ, WRITE, REVIEW)))
    agent = bearer(make_key("carol", (READ, WRITE), agent=True))
    created = store(client, agent, "Carol's dentist appointment is on Thursdays.",
                    visibility="private")
    assert created["assertionStatus"] == "candidate"
    decided = client.post(f"/api/v1/review/assertions/{created['assertionId']}/decision",
                          json={"decision": "approve"}, headers=carol)
    assert decided.status_code == 200, decided.text
    assert assertion_state(conn, created["assertionId"]) == ("active", "human_approved")


def test_f6_a_note_or_wiki_reason_holding_a_credential_is_refused_and_changes_nothing(
        client, conn, make_key):
    writer = bearer(make_key("alice", (READ, WRITE)))
    rita = bearer(make_key("rita", (READ, REVIEW)))
    ident = store(client, writer, INFERENCE, visibility="workspace")["assertionId"]
    wiki = str(conn.execute(
        "INSERT INTO wiki_change_proposals (instance_key, audience_kind, audience_key,"
        " page_slug, title, body_markdown) VALUES ('default', 'team', 'default',"
        " 'ops/keys', 'Keys', 'Body') RETURNING id").fetchone()[0])
    before = (assertion_state(conn, ident), review_rows(conn))
    note = f"checked with the token {JWT}"
    for url, body in (
            (f"/api/v1/review/assertions/{ident}/decision",
             {"decision": "approve", "note": note}),
            ("/api/v1/review/assertions/bulk", {"decision": "approve", "note": note})):
        error = assert_error(client.post(url, json=body, headers=rita), 422,
                             "credential_detected")
        assert error["details"] == {"field": "note", "kind": "JSON web token"}
        assert JWT not in str(error)
    error = assert_error(client.post(f"/api/v1/review/wiki/{wiki}/decision",
                                     json={"decision": "reject", "reason": note},
                                     headers=rita), 422, "credential_detected")
    assert error["details"]["field"] == "reason"
    assert (assertion_state(conn, ident), review_rows(conn)) == before
    assert conn.execute("SELECT state, decision_reason FROM wiki_change_proposals"
                        " WHERE id = %s", (wiki,)).fetchone() == ("draft", None)
    assert not conn.execute("SELECT 1 FROM agent_memory_assertion_reviews"
                            " WHERE note LIKE %s", (f"%{JWT[:20]}%",)).fetchone()

    fine = client.post(f"/api/v1/review/assertions/{ident}/decision",
                       json={"decision": "approve", "note": "checked with finance"},
                       headers=rita)
    assert fine.status_code == 200, fine.text
