"""Forgetting one memory (issue 32.4): a person deletes one of their own memories through
``DELETE /api/v1/memory/{id}``, and what was derived only from it goes too (its chunks,
source, assertion with its evidence and projection, events); nobody else can delete it,
and an agent or runtime key cannot. (An assertion other sources support stays: the rule of
a person's erasure, tested in tests/api/test_erasure_complete.py.)"""

from __future__ import annotations

import uuid

from tests.api.conftest import READ, WRITE, assert_error, bearer, store

PLATE = "My bicycle lock code is 4471, kept in the blue notebook."


def _rows(conn, memory_id: str, assertion_id: str) -> dict[str, int]:
    def count(sql: str, value: str) -> int:
        return conn.execute(sql, (value,)).fetchone()[0]
    return {
        "memories": count("SELECT count(*) FROM agent_memories WHERE id = %s", memory_id),
        "chunks": count("SELECT count(*) FROM agent_memory_chunks WHERE memory_id = %s",
                        memory_id),
        "assertions": count("SELECT count(*) FROM agent_memory_assertions WHERE id = %s",
                            assertion_id),
        "evidence": count("SELECT count(*) FROM agent_memory_assertion_evidence"
                          " WHERE assertion_id = %s", assertion_id),
        "projections": count("SELECT count(*) FROM agent_memories WHERE assertion_id = %s",
                             assertion_id),
        "events": count("SELECT count(*) FROM agent_memory_events WHERE memory_id = %s",
                        memory_id),
    }


def _texts(conn, needle: str) -> int:
    """Rows of the memory tables whose text still holds ``needle``."""
    return conn.execute(
        "SELECT (SELECT count(*) FROM agent_memories WHERE content LIKE %(n)s)"
        " + (SELECT count(*) FROM agent_memory_chunks WHERE content LIKE %(n)s)"
        " + (SELECT count(*) FROM agent_memory_assertions WHERE assertion_text LIKE %(n)s)"
        " + (SELECT count(*) FROM agent_memory_sources WHERE content LIKE %(n)s)",
        {"n": f"%{needle}%"}).fetchone()[0]


def test_a_person_deletes_their_own_memory_and_what_was_derived_only_from_it(
        client, conn, make_key):
    owner = bearer(make_key("ola", (READ, WRITE)))
    stored = store(client, owner, PLATE, visibility="private")
    memory_id, assertion_id = stored["id"], stored["assertionId"]
    assert client.get(f"/api/v1/memory/{memory_id}", headers=owner).status_code == 200
    before = _rows(conn, memory_id, assertion_id)
    assert before["memories"] == before["assertions"] == 1 and before["chunks"] >= 1
    assert _texts(conn, "4471") >= 3

    deleted = client.delete(f"/api/v1/memory/{memory_id}", headers=owner)
    assert deleted.status_code == 200, deleted.text
    body = deleted.json()
    assert body["memoryId"] == memory_id and body["totalRemoved"] >= 4
    assert body["removed"]["agent_memories"] >= 1
    assert body["removed"]["agent_memory_assertions"] == 1

    assert _rows(conn, memory_id, assertion_id) == dict.fromkeys(before, 0)
    assert _texts(conn, "4471") == 0                       # deletion really deletes
    assert_error(client.get(f"/api/v1/memory/{memory_id}", headers=owner), 404)
    found = client.get("/api/v1/memory", headers=owner,
                       params={"query": "bicycle lock code"}).json()["results"]
    assert all("4471" not in r["content"] for r in found)
    events = client.get("/api/v1/events", headers=owner).json()
    kinds = [e["kind"] for e in events["events"]]
    assert "memory.forgotten" in kinds and "user.erased" not in kinds
    # the append-only report names neither the person nor the memory (a later erasure of
    # the person could not remove it): a hash and counts only
    assert conn.execute("SELECT count(*) FROM agent_memory_erasures e"
                        " WHERE to_jsonb(e)::text LIKE '%%ola%%'"
                        "    OR to_jsonb(e)::text LIKE %s", (f"%{memory_id}%",)).fetchone()[0] == 0
    assert_error(client.delete(f"/api/v1/memory/{memory_id}", headers=owner), 404)


def test_nobody_else_deletes_it_and_an_agent_key_cannot(client, conn, make_key):
    owner = bearer(make_key("ola", (READ, WRITE)))
    other = bearer(make_key("pia", (READ, WRITE)))
    agent = bearer(make_key("ola", (READ, WRITE), agent=True))
    runtime = bearer(make_key(None, (READ, WRITE), runtime=True))
    team = store(client, owner, "The team's printer is on the third floor.",
                 visibility="team")["id"]
    # another user sees the team memory, but it is not theirs: the same 404 as no memory
    assert client.get(f"/api/v1/memory/{team}", headers=other).status_code == 200
    assert_error(client.delete(f"/api/v1/memory/{team}", headers=other), 404)
    assert_error(client.delete(f"/api/v1/memory/{uuid.uuid4()}", headers=owner), 404)
    assert_error(client.delete("/api/v1/memory/not-a-uuid", headers=owner), 404)
    for headers in (agent, runtime):
        error = assert_error(client.delete(f"/api/v1/memory/{team}", headers=headers), 403)
        assert error["code"] == "person_required"
    reader = bearer(make_key("ola", (READ,)))
    assert_error(client.delete(f"/api/v1/memory/{team}", headers=reader), 403)
    assert conn.execute("SELECT count(*) FROM agent_memories WHERE id = %s",
                        (team,)).fetchone()[0] == 1



def _recalled(client, headers, query: str) -> list[str]:
    response = client.get("/api/v1/memory", headers=headers, params={"query": query})
    assert response.status_code == 200, response.text
    return [r["content"] for r in response.json()["results"]]


def test_a_person_corrects_their_memory_and_the_old_stays_in_the_history(
        client, conn, make_key):
    owner = bearer(make_key("ola", (READ, WRITE)))
    old = store(client, owner, "My dentist appointment is on Tuesday at 9.",
                visibility="private")
    url = f"/api/v1/memory/{old['id']}/correction"
    for bad in ({}, {"content": ""}, {"content": 7}, {"content": "x", "surprise": 1}):
        assert_error(client.post(url, json=bad, headers=owner), 400)

    corrected = client.post(url, json={"content": "My dentist appointment is on Thursday"
                                                  " at 9."}, headers=owner)
    assert corrected.status_code == 200, corrected.text
    body = corrected.json()
    assert body["status"] == "corrected" and body["correctedId"] == old["id"]
    recalled = _recalled(client, owner, "when is my dentist appointment")
    assert "My dentist appointment is on Thursday at 9." in recalled
    assert "My dentist appointment is on Tuesday at 9." not in recalled
    assert_error(client.get(f"/api/v1/memory/{old['id']}", headers=owner), 404)
    # the history keeps the old one, superseded by the new
    assert conn.execute("SELECT status, superseded_by FROM agent_memory_assertions"
                        " WHERE id = %s", (old["assertionId"],)).fetchone() == (
        "superseded", uuid.UUID(body["assertionId"]))
    assert conn.execute("SELECT memory_state, superseded_by_memory_id FROM agent_memories"
                        " WHERE id = %s", (old["id"],)).fetchone() == (
        "superseded", uuid.UUID(body["id"]))
    # corrected once: the old one cannot be corrected again; a stranger's try is a 404
    assert_error(client.post(url, json={"content": "Friday."}, headers=owner), 409)
    other = bearer(make_key("pia", (READ, WRITE)))
    assert_error(client.post(f"/api/v1/memory/{body['id']}/correction",
                             json={"content": "Friday."}, headers=other), 404)
    assert_error(client.post(f"/api/v1/memory/{body['id']}/correction",
                             json={"content": "My dentist appointment is on Thursday at 9."},
                             headers=owner), 400)


def test_an_agents_correction_waits_for_a_persons_review(client, conn, make_key):
    owner = bearer(make_key("ola", (READ, WRITE)))
    agent = bearer(make_key("ola", (READ, WRITE), agent=True))
    old = store(client, owner, "The team standup is at 9:30.", visibility="team")
    proposed = client.post(f"/api/v1/memory/{old['id']}/correction",
                           json={"content": "The team standup is at 10:00."}, headers=agent)
    assert proposed.status_code == 200, proposed.text
    body = proposed.json()
    assert body["status"] == "proposed" and body["conflictId"]
    recalled = _recalled(client, owner, "when is the team standup")
    assert "The team standup is at 9:30." in recalled           # still recalled
    assert "The team standup is at 10:00." not in recalled      # waits for review
    assert conn.execute("SELECT status, review_state FROM agent_memory_assertions"
                        " WHERE id = %s", (body["assertionId"],)).fetchone()[0] == "candidate"
    assert conn.execute("SELECT status FROM agent_memory_assertion_conflicts WHERE id = %s",
                        (body["conflictId"],)).fetchone() == ("open",)
    # the same through X-Memory-Writer: agent on the person's own key
    declared = client.post(f"/api/v1/memory/{old['id']}/correction",
                           json={"content": "The team standup is at 10:15."},
                           headers={**owner, "X-Memory-Writer": "agent"})
    assert declared.status_code == 200 and declared.json()["status"] == "proposed"
