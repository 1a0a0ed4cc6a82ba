"""/api/v1/feedback: the runtime's injected/cited hooks record events and move the counters,
once per run, and only for assertions the key may see."""

from __future__ import annotations

import time
import uuid

import psycopg

from memory_platform.foundation.db.connection import open_api_pool, open_pool
from tests.api.conftest import (
    ALL_SCOPES,
    assert_error,
    bearer,
    make_settings,
    open_client,
    row_counts,
    store,
)

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
    bobs = store(client, bearer(make_key("bob", ALL_SCOPES)), FACT,
                 visibility="private")["assertionId"]
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
    assert_error(response, 404, "not_found")
    assert _counters(database_url, assertion) == (1, 0)


# --- F5: a run belongs to the user who reported it first -------------------------------------

PLANNED = "Bob plans to resign in March after the bonus payout."


def test_f5_another_users_run_id_gets_nothing_and_changes_nothing(client, make_key,
                                                                 database_url):
    """Review A5: Eve with Bob's runId learns nothing about Bob's private assertion and Bob's
    cited_count does not move; the answer is that of a run that does not exist."""
    bob = bearer(make_key("bob", ALL_SCOPES))
    eve = bearer(make_key("eve", ALL_SCOPES))
    private = store(client, bob, PLANNED, explicitPrivate=True)["assertionId"]
    injected = client.post("/api/v1/feedback/injected",
                           json={"runId": "run-42", "assertionIds": [private]}, headers=bob)
    assert injected.json()["counted"] == 1
    before = row_counts(database_url)
    stolen = client.post("/api/v1/feedback/cited",
                         json={"runId": "run-42",
                               "responseText": "resign March bonus payout plans"},
                         headers=eve)
    unknown = client.post("/api/v1/feedback/cited",
                          json={"runId": "run-43",
                                "responseText": "resign March bonus payout plans"},
                          headers=eve)
    error = assert_error(stolen, 404, "not_found")
    assert error["message"] == "no run 'run-42'"
    assert assert_error(unknown, 404, "not_found")["message"] == "no run 'run-43'"
    assert private not in stolen.text
    hijack = client.post("/api/v1/feedback/injected",
                         json={"runId": "run-42", "assertionIds": [private]}, headers=eve)
    assert_error(hijack, 404, "not_found")
    assert row_counts(database_url) == before
    assert _counters(database_url, private) == (1, 0)
    own = client.post("/api/v1/feedback/cited",
                      json={"runId": "run-42", "responseText": PLANNED}, headers=bob)
    assert own.json()["cited"] == [private]
    assert _counters(database_url, private) == (1, 1)


def test_f5_boosting_with_new_run_ids_counts_only_the_callers_visible_assertions(
        client, make_key, database_url):
    """Review A18: ten fresh run ids reporting Bob's private fact move none of its counters
    and never name it; Eve's own fact counts once per run, as any fact she was shown."""
    bob = bearer(make_key("bob", ALL_SCOPES))
    eve = bearer(make_key("eve", ALL_SCOPES))
    private = store(client, bob, PLANNED, explicitPrivate=True)["assertionId"]
    own = store(client, eve, FACT, explicitPrivate=True)["assertionId"]
    for i in range(10):
        run = {"runId": f"boost-{i}"}
        injected = client.post("/api/v1/feedback/injected",
                               json={**run, "assertionIds": [private, own]}, headers=eve)
        assert injected.json() == {**run, "counted": 1, "recorded": 1, "ignored": 1}
        cited = client.post("/api/v1/feedback/cited",
                            json={**run, "responseText": f"{PLANNED} {FACT}"}, headers=eve)
        assert cited.json() == {**run, "cited": [own]}
    assert _counters(database_url, private) == (0, 0)
    assert _counters(database_url, own) == (10, 10)


# --- F3: the cited sensor reads request text in linear time ------------------------------------


def test_f3_a_body_of_brackets_is_answered_at_once(client, alice, database_url):
    """Review A6: 60,000 '[' are refused (longer than cited_response_max_chars) and 16,000
    (within it) are read in linear time; neither takes a noticeable time."""
    _injected(client, alice, "dos-1")
    before = row_counts(database_url)
    started = time.perf_counter()
    refused = client.post("/api/v1/feedback/cited",
                          json={"runId": "dos-1", "responseText": "[" * 60_000},
                          headers=alice)
    read = client.post("/api/v1/feedback/cited",
                       json={"runId": "dos-1", "responseText": "[" * 16_000}, headers=alice)
    elapsed = time.perf_counter() - started
    error = assert_error(refused, 400, "response_too_long")
    assert error["details"] == {"field": "responseText", "maxChars": 16_000}
    assert read.status_code == 200 and read.json()["cited"] == []
    assert row_counts(database_url) == before
    assert elapsed < 5.0


# --- F9: API statements are time-limited ------------------------------------------------------


def test_f9_a_statement_past_the_api_limits_answers_503_and_changes_nothing(
        make_key, database_url, tmp_path):
    """A report that waits on a lock longer than api_lock_timeout_ms is cancelled by
    PostgreSQL and answered 503 query_timeout (not 500); the API's connections carry both
    limits, a pool of the CLI or Dagster carries none."""
    settings = make_settings(database_url, tmp_path / "state", api_lock_timeout_ms=200,
                             api_statement_timeout_ms=3000)
    token = bearer(make_key("alice", ALL_SCOPES))
    with open_client(settings) as api, psycopg.connect(database_url) as holder:
        assertion = store(api, token, FACT)["assertionId"]
        holder.execute("INSERT INTO agent_feedback_runs (instance_key, run_id, user_id)"
                       " VALUES ('default', 'locked-run', 'alice')")  # uncommitted: a lock
        before = row_counts(database_url)
        response = api.post("/api/v1/feedback/injected",
                            json={"runId": "locked-run", "assertionIds": [assertion]},
                            headers=token)
        assert_error(response, 503, "query_timeout")
        assert response.headers["Retry-After"]
        holder.rollback()
        assert row_counts(database_url) == before
    limits = "SELECT current_setting('statement_timeout'), current_setting('lock_timeout')"
    with open_api_pool(settings) as pool, pool.connection() as conn:
        assert conn.execute(limits).fetchone() == ("3s", "200ms")
    with open_pool(settings, min_size=0) as other, other.connection() as conn:
        assert conn.execute(limits).fetchone() == ("0", "0")


def _explicit_counters(database_url: str, assertion_id: str) -> tuple[int, int]:
    with psycopg.connect(database_url, autocommit=True) as connection:
        return connection.execute(
            "SELECT helpful_count, unhelpful_count FROM agent_memory_assertions WHERE id = %s",
            (assertion_id,)).fetchone()


def test_explicit_feedback_is_an_event_once_per_run_and_moves_the_ranking(client, alice,
                                                                          make_key,
                                                                          database_url):
    """Issue 32.6: helpful / unhelpful feedback through REST, once per assertion, kind and
    run, only for assertions the key may see, and read by the ranking."""
    good = store(client, alice, "The VPN gateway restarts every night at 02:00.",
                 visibility="private")
    bad = store(client, alice, "The VPN gateway restarts every night at 03:00.",
                visibility="private")
    question = {"query": "when does the VPN gateway restart"}

    def order() -> list[str]:
        return [r["assertionId"] for r in client.get("/api/v1/memory", params=question,
                                                      headers=alice).json()["results"]]

    before = order()
    assert before.index(good["assertionId"]) < before.index(bad["assertionId"])
    body = {"runId": "run-x", "kind": "unhelpful", "assertionIds": [good["assertionId"]],
            "note": "outdated"}
    first = client.post("/api/v1/feedback/explicit", json=body, headers=alice)
    assert first.status_code == 200, first.text
    assert first.json() == {"runId": "run-x", "kind": "unhelpful", "counted": 1,
                            "recorded": 1, "ignored": 0}
    again = client.post("/api/v1/feedback/explicit", json=body, headers=alice)
    assert again.json()["recorded"] == 0
    helpful = client.post("/api/v1/feedback/explicit", headers=alice, json={
        "runId": "run-x", "kind": "helpful", "assertionIds": [bad["assertionId"]]})
    assert helpful.json()["recorded"] == 1
    assert _explicit_counters(database_url, good["assertionId"]) == (0, 1)
    assert _explicit_counters(database_url, bad["assertionId"]) == (1, 0)
    with psycopg.connect(database_url, autocommit=True) as connection:
        kinds = connection.execute(
            "SELECT event_type, details->>'note' FROM agent_memory_retrieval_feedback"
            " WHERE run_id = 'run-x' ORDER BY id").fetchall()
    assert kinds == [("unhelpful", "outdated"), ("helpful", None)]
    ranked = order()
    assert ranked.index(bad["assertionId"]) < ranked.index(good["assertionId"])

    bob = bearer(make_key("bob", ALL_SCOPES))
    assert_error(client.post("/api/v1/feedback/explicit", headers=bob, json=body), 404)
    other_run = client.post("/api/v1/feedback/explicit", headers=bob, json={
        **body, "runId": "run-bob"}).json()
    assert other_run["counted"] == 0 and other_run["ignored"] == 1   # alice's private fact
    assert_error(client.post("/api/v1/feedback/explicit", headers=alice,
                             json={**body, "kind": "meh"}), 400)


def test_a_search_is_a_retrieved_event_of_the_searcher(api_settings, make_key, database_url):
    """Issue 32.6 (seed:75, 89): what a search returned is a durable ``retrieved`` event with
    the searcher and the session, written by the API's deferred stamper (flushed at the
    latest when the app stops), beside the memory's retrieval_count."""
    alice, bob = bearer(make_key("alice", ALL_SCOPES)), bearer(make_key("bob", ALL_SCOPES))
    with open_client(api_settings) as client:
        fact = store(client, alice, FACT, visibility="team")
        for headers, session in ((alice, "s-1"), (alice, "s-1"), (bob, None)):
            params = {"query": "customer portal single sign-on"}
            if session:
                params["sessionKey"] = session
            found = client.get("/api/v1/memory", headers=headers, params=params).json()
            assert fact["id"] in [r["id"] for r in found["results"]]
    with psycopg.connect(database_url, autocommit=True) as connection:
        events = connection.execute(
            "SELECT user_id, session_key, assertion_id::text, details FROM"
            " agent_memory_retrieval_feedback WHERE memory_id = %s AND event_type = 'retrieved'"
            " ORDER BY user_id", (fact["id"],)).fetchall()
        count = connection.execute("SELECT retrieval_count FROM agent_memories WHERE id = %s",
                                   (fact["id"],)).fetchone()[0]
    assert count == 3
    recalls: dict[tuple, int] = {}      # one row per recaller and flush interval
    for user, session, _, details in events:
        recalls[(user, session)] = recalls.get((user, session), 0) + details["count"]
    assert recalls == {("alice", "s-1"): 2, ("bob", None): 1}
    assert {e[2] for e in events} == {fact["assertionId"]}
