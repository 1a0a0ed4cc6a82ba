"""The review routes over HTTP (scope memory:review): a pending workspace fact in the queue,
approved by a person and recalled at once; the scope enforced; the Dream detail route's 404."""

from __future__ import annotations

import uuid

from tests.api.conftest import READ, WRITE, assert_error, bearer, store

FACT = "The office wifi password rotates on the first Monday of each quarter."


def test_a_reviewer_approves_a_pending_workspace_fact_and_it_is_recalled_at_once(
        client, alice, make_key):
    created = store(client, alice, FACT, visibility="workspace")
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
