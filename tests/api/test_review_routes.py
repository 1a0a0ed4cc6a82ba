"""The review and user routes over HTTP: a pending workspace fact in the queue, approved by a
person and recalled at once; bulk decisions over a filtered queue; conflicts resolved; wiki
drafts decided; the scope, visibility (404) and bad bodies (400, nothing changed); the user
registry and the sharing preference (a person's admin key only); the Dream detail route's 404.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from memory_platform.features.consolidation import lifecycle
from tests.api.conftest import ADMIN, READ, REVIEW, WRITE, assert_error, bearer, store
from tests.api.test_review_people import forced_key


@pytest.fixture
def conn(database_url: str):
    with psycopg.connect(database_url, autocommit=True) as connection:
        yield connection


def states(conn, ids) -> dict[str, tuple[str, str]]:
    return {str(r[0]): (r[1], r[2]) for r in conn.execute(
        "SELECT id, status, review_state FROM agent_memory_assertions"
        " WHERE id = ANY(%s::uuid[])", ([str(i) for i in ids],))}


def review_rows(conn) -> int:
    return conn.execute("SELECT count(*) FROM agent_memory_assertion_reviews").fetchone()[0]

FACT = "The office wifi password rotates on the first Monday of each quarter."


def test_a_reviewer_approves_a_pending_workspace_fact_and_it_is_recalled_at_once(
        client, alice, make_key):
    writer = bearer(make_key("walt", (READ, WRITE)))        # four eyes: not alice's own
    created = store(client, writer, FACT, visibility="workspace")
    assert created["assertionStatus"] == "candidate"        # workspace waits for review
    reader = bearer(make_key("rita", (READ, WRITE)))
    query = {"query": "when does the office wifi password rotate"}
    assert client.get("/api/v1/memory", params=query, headers=reader).json()["results"] == []

    queue = client.get("/api/v1/review/queue", params={"kind": "assertion"}, headers=alice)
    assert queue.status_code == 200, queue.text
    (item,) = [i for i in queue.json()["items"] if i["id"] == created["assertionId"]]
    assert item["evidence"]
    decided = client.post(f"/api/v1/review/assertions/{created['assertionId']}/decision",
                          json={"decision": "approve"}, headers=alice)
    assert decided.status_code == 200, decided.text
    assert decided.json()["decided"] == [created["assertionId"]]

    hits = client.get("/api/v1/memory", params=query, headers=reader).json()["results"]
    assert [h["content"] for h in hits] == [FACT]
    assert_error(client.get("/api/v1/review/queue", headers=reader), 403)
    assert_error(client.post(f"/api/v1/review/assertions/{uuid.uuid4()}/decision",
                             json={"decision": "approve"}, headers=alice), 404)
    assert_error(client.post(f"/api/v1/review/assertions/{created['assertionId']}/decision",
                             json={"decision": "maybe"}, headers=alice), 400)


def test_the_dream_detail_of_an_unknown_dream_is_404(client, alice):
    assert_error(client.get(f"/internal/memory/dreams/{uuid.uuid4()}", headers=alice), 404)
    assert_error(client.get("/internal/memory/dreams/not-a-uuid", headers=alice), 404)


def test_a_bulk_decision_takes_the_filtered_queue_and_bad_bodies_change_nothing(
        client, alice, conn, make_key):
    writer = bearer(make_key("walt", (READ, WRITE)))        # four eyes: not alice's own
    facts = [store(client, writer, f"Server rack {n} sits in room {n + 10}.",
                   visibility="workspace")["assertionId"] for n in range(3)]
    url = "/api/v1/review/assertions/bulk"
    before = (states(conn, facts), review_rows(conn))
    for body in ({"decision": "supersede"}, {"decision": "approve", "limit": 0},
                 {"decision": "approve", "ids": ["not-a-uuid"]},
                 {"decision": "approve", "audience": "galaxy"},
                 {"decision": "approve", "type": "gossip"},
                 {"decision": "approve", "surprise": True},
                 {"decision": "approve", "reasonCode": "Not A Code"}):
        assert_error(client.post(url, json=body, headers=alice), 400)
    assert (states(conn, facts), review_rows(conn)) == before

    only_two = client.post(url, json={"decision": "reject", "ids": facts[:2],
                                      "reasonCode": "duplicate_rack"}, headers=alice)
    assert only_two.status_code == 200, only_two.text
    assert sorted(only_two.json()["decided"]) == sorted(facts[:2])
    assert {s for s, _ in states(conn, facts[:2]).values()} == {"rejected"}
    rest = client.post(url, json={"decision": "approve", "type": "fact",
                                  "audience": "workspace"}, headers=alice).json()
    assert rest["decided"] == [facts[2]] and rest["projected"] == 1
    assert states(conn, [facts[2]])[facts[2]] == ("active", "human_approved")


def test_a_conflict_is_resolved_by_a_person_once(client, alice, conn, make_key):
    old = store(client, alice, "The release train leaves on Mondays.",
                visibility="team")["assertionId"]
    new = store(client, alice, "The release train leaves on Fridays.",
                visibility="team")["assertionId"]
    with conn.transaction():
        conflict = lifecycle.open_conflict(conn, "default", uuid.UUID(new), uuid.UUID(old),
                                           detected_by="human", reason="same slot")
    queue = client.get("/api/v1/review/queue", params={"kind": "conflict"}, headers=alice)
    (item,) = queue.json()["items"]
    assert item["id"] == str(conflict)
    assert {item["assertion"]["id"], item["conflictingAssertion"]["id"]} == {old, new}

    url = f"/api/v1/review/conflicts/{conflict}/resolution"
    assert_error(client.post(url, json={"action": "keep_one"}, headers=alice), 400)
    assert_error(client.post(url, json={"action": "shrug"}, headers=alice), 400)
    assert_error(client.post(url, json={"action": "keep_one", "keepId": 7}, headers=alice),
                 400)
    assert_error(client.post(f"/api/v1/review/conflicts/{uuid.uuid4()}/resolution",
                             json={"action": "keep_both"}, headers=alice), 404)
    reader = bearer(make_key("rita", (READ, WRITE)))
    assert_error(client.post(url, json={"action": "keep_both"}, headers=reader), 403)

    resolved = client.post(url, json={"action": "keep_one", "keepId": new}, headers=alice)
    assert resolved.status_code == 200, resolved.text
    assert resolved.json()["decided"] == [str(conflict)]
    assert states(conn, [old])[old][0] == "superseded"
    assert client.get("/api/v1/review/queue", params={"kind": "conflict"},
                      headers=alice).json()["items"] == []
    assert_error(client.post(url, json={"action": "keep_both"}, headers=alice), 409)


def test_another_users_private_conflict_is_404_to_a_reviewer(client, alice, conn, make_key):
    bob = bearer(make_key("bob", (READ, WRITE, REVIEW)))
    one = store(client, bob, "Bob's locker is number 12.", visibility="private")["assertionId"]
    two = store(client, bob, "Bob's locker is number 21.", visibility="private")["assertionId"]
    with conn.transaction():
        conflict = lifecycle.open_conflict(conn, "default", uuid.UUID(two), uuid.UUID(one),
                                           detected_by="human", reason="same slot")
    assert client.get("/api/v1/review/queue", params={"kind": "conflict"},
                      headers=alice).json()["items"] == []
    url = f"/api/v1/review/conflicts/{conflict}/resolution"
    assert_error(client.post(url, json={"action": "keep_both"}, headers=alice), 404)
    assert client.post(url, json={"action": "keep_both"}, headers=bob).status_code == 200


def _draft(conn, audience_kind: str, audience_key: str, slug: str) -> str:
    return str(conn.execute(
        "INSERT INTO wiki_change_proposals (instance_key, audience_kind, audience_key,"
        " page_slug, title, body_markdown) VALUES ('default', %s, %s, %s, 'Title', 'Body')"
        " RETURNING id", (audience_kind, audience_key, slug)).fetchone()[0])


def test_wiki_drafts_are_decided_once_and_only_where_visible(client, alice, conn):
    team = _draft(conn, "team", "default", "ops/deploys")
    private = _draft(conn, "private", "bob", "bob/notes")
    listed = client.get("/api/v1/review/queue", params={"kind": "wiki_draft"},
                        headers=alice).json()["items"]
    assert [i["id"] for i in listed] == [team]
    assert_error(client.get("/api/v1/review/queue", params={"kind": "wiki_draft",
                                                            "type": "fact"},
                            headers=alice), 400)
    url = f"/api/v1/review/wiki/{team}/decision"
    assert_error(client.post(url, json={"decision": "publish"}, headers=alice), 400)
    decided = client.post(url, json={"decision": "reject", "reason": "outdated"},
                          headers=alice)
    assert decided.status_code == 200, decided.text
    assert conn.execute("SELECT state, decided_by, decision_reason FROM wiki_change_proposals"
                        " WHERE id = %s", (team,)).fetchone() == ("rejected", "alice",
                                                                  "outdated")
    assert_error(client.post(url, json={"decision": "approve"}, headers=alice), 409)
    assert_error(client.post(f"/api/v1/review/wiki/{private}/decision",
                             json={"decision": "approve"}, headers=alice), 404)
    assert_error(client.post("/api/v1/review/wiki/not-an-id/decision",
                             json={"decision": "approve"}, headers=alice), 404)


def test_users_are_listed_and_only_a_persons_admin_key_sets_sharing(client, make_key,
                                                                     database_url):
    admin = bearer(make_key("ada", (READ, WRITE, ADMIN)))
    make_key("bob", (READ, WRITE))
    listed = client.get("/api/v1/users", headers=admin)
    assert listed.status_code == 200, listed.text
    users = {u["userId"]: u for u in listed.json()["users"]}
    assert users["bob"]["sharesWithTeam"] is True and users["bob"]["shareIsDefault"] is True

    url = "/api/v1/users/sharing"
    # Such keys cannot be made any more (migration 0028); rows forced past the CHECK are
    # still no person.
    runtime = forced_key(database_url, None, (READ, WRITE, ADMIN))
    agent = forced_key(database_url, "ada", (READ, WRITE, ADMIN), agent=True)
    plain = bearer(make_key("bob", (READ, WRITE)))
    body = {"userId": "bob", "share": False}
    assert_error(client.put(url, json=body, headers=runtime), 403, "person_required")
    assert_error(client.put(url, json=body, headers=agent), 403, "person_required")
    assert_error(client.put(url, json=body, headers=plain), 403)
    for bad in ({"userId": "bob", "share": "no"}, {"userId": "", "share": False},
                {"userId": "bob"}, {"userId": "bob", "share": False, "extra": 1}):
        assert_error(client.put(url, json=bad, headers=admin), 400)
    unchanged = {u["userId"]: u for u in client.get("/api/v1/users",
                                                    headers=admin).json()["users"]}
    assert unchanged["bob"]["shareIsDefault"] is True

    changed = client.put(url, json=body, headers=admin)
    assert changed.status_code == 200, changed.text
    out = changed.json()
    assert out["userId"] == "bob" and out["sharesWithTeam"] is False
    assert out["shareIsDefault"] is False and out["shareChangedBy"].startswith("admin key")
    assert_error(client.get("/api/v1/users", params={"limit": 3}, headers=admin), 400)


def test_an_open_conflict_keeps_both_facts_out_of_recall_until_a_person_keeps_both(
        client, alice, conn):
    def recalled() -> set[str]:
        response = client.get("/api/v1/memory", params={"query": "When does the shuttle bus"
                                                          " leave the depot?"}, headers=alice)
        assert response.status_code == 200, response.text
        return {hit["content"] for hit in response.json()["results"]}

    early, late = "The shuttle bus leaves the depot at 7:10.", \
        "The shuttle bus leaves the depot at 7:40."
    old = store(client, alice, early, visibility="team")["assertionId"]
    new = store(client, alice, late, visibility="team")["assertionId"]
    assert {early, late} <= recalled()
    with conn.transaction():
        conflict = lifecycle.open_conflict(conn, "default", uuid.UUID(new), uuid.UUID(old),
                                           detected_by="consolidation", reason="same slot")
    assert states(conn, [old, new]) == {old: ("conflicted", "policy_approved"),
                                        new: ("conflicted", "policy_approved")}
    assert not {early, late} & recalled()       # conflicted facts never enter recall
    for exact in (old, new):                    # and an exact read of their memory neither
        memory = conn.execute("SELECT id FROM agent_memories WHERE assertion_id = %s",
                              (exact,)).fetchone()[0]
        assert_error(client.get(f"/api/v1/memory/{memory}", headers=alice), 404)

    resolved = client.post(f"/api/v1/review/conflicts/{conflict}/resolution",
                           json={"action": "keep_both"}, headers=alice)
    assert resolved.status_code == 200, resolved.text
    assert {s for s, _ in states(conn, [old, new]).values()} == {"active"}
    assert {early, late} <= recalled()
