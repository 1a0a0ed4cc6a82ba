"""/api/v1/feedback: the runtime's injected/cited hooks record events and move the counters,
once per run, and only for assertions the key may see."""

from __future__ import annotations

import uuid

import psycopg

from tests.api.conftest import ALL_SCOPES, bearer, row_counts, store

FACT = "The customer portal uses Keycloak for single sign-on since March."


def _counters(database_url: str, assertion_id: str) -> tuple[int, int]:
    with psycopg.connect(database_url, autocommit=True) as connection:
        return connection.execute(
            "SELECT injected_count, cited_count FROM agent_memory_assertions WHERE id = %s",
            (assertion_id,)).fetchone()


def _events(database_url: str) -> list[tuple[str, str, str]]:
    with psycopg.connect(database_url, autocommit=True) as connection:
        return connection.execute(
            "SELECT assertion_id::text, event_type, run_id FROM agent_memory_retrieval_feedback"
            " ORDER BY id").fetchall()


def _injected(client, headers: dict[str, str], run_id: str) -> str:
    """A stored memory's assertion, reported injected in ``run_id``; its id."""
    assertion = store(client, headers, FACT)["assertionId"]
    client.post("/api/v1/feedback/injected",
                json={"runId": run_id, "assertionIds": [assertion]}, headers=headers)
    return assertion


def test_injected_records_one_event_per_run_and_moves_the_counter(client, alice, database_url):
    assertion = store(client, alice, FACT)["assertionId"]
    body = {"runId": "run-1", "assertionIds": [assertion]}
    first = client.post("/api/v1/feedback/injected", json=body, headers=alice)
    assert first.status_code == 200
    assert first.json() == {"runId": "run-1", "counted": 1, "recorded": 1, "ignored": 0}
    again = client.post("/api/v1/feedback/injected", json=body, headers=alice)
    assert again.json() == {"runId": "run-1", "counted": 1, "recorded": 0, "ignored": 0}
    assert _counters(database_url, assertion) == (1, 0)
    assert _events(database_url) == [(assertion, "injected", "run-1")]


def test_cited_records_the_assertions_the_answer_reused(client, alice, database_url):
    assertion = _injected(client, alice, "run-2")
    response = client.post(
        "/api/v1/feedback/cited",
        json={"runId": "run-2",
              "responseText": "Since March the customer portal signs users in via Keycloak."},
        headers=alice)
    assert response.status_code == 200
    assert response.json() == {"runId": "run-2", "cited": [assertion]}
    assert _counters(database_url, assertion) == (1, 1)
    assert ("cited" in {event for _, event, _ in _events(database_url)})


def test_cited_without_overlap_records_nothing(client, alice, database_url):
    assertion = _injected(client, alice, "run-3")
    response = client.post("/api/v1/feedback/cited",
                           json={"runId": "run-3", "responseText": "The weather is nice."},
                           headers=alice)
    assert response.json()["cited"] == []
    assert _counters(database_url, assertion) == (1, 0)


def test_injected_ignores_assertions_the_key_cannot_see(client, alice, make_key, database_url):
    bobs = store(client, bearer(make_key("bob", ALL_SCOPES)), FACT)["assertionId"]
    other_instance = store(client, bearer(make_key("alice", ALL_SCOPES, instance="acme")),
                           FACT)["assertionId"]
    before = row_counts(database_url)
    response = client.post(
        "/api/v1/feedback/injected",
        json={"runId": "run-4", "assertionIds": [bobs, other_instance, str(uuid.uuid4())]},
        headers=alice)
    assert response.status_code == 200
    assert response.json() == {"runId": "run-4", "counted": 0, "recorded": 0, "ignored": 3}
    assert _counters(database_url, bobs) == (0, 0)
    assert _counters(database_url, other_instance) == (0, 0)
    assert row_counts(database_url) == before


def test_cited_never_counts_another_instances_run(client, alice, make_key, database_url):
    acme = bearer(make_key("alice", ALL_SCOPES, instance="acme"))
    assertion = _injected(client, acme, "shared-run")
    response = client.post(
        "/api/v1/feedback/cited",
        json={"runId": "shared-run",
              "responseText": "Since March the customer portal signs users in via Keycloak."},
        headers=alice)
    assert response.json()["cited"] == []
    assert _counters(database_url, assertion) == (1, 0)
