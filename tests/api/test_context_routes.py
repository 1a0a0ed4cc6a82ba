"""/api/v1/context: unified search over every recall surface, then the exact item with its
provenance; every item is marked as untrusted data."""

from __future__ import annotations

from tests.api.conftest import add_message, store

FACT = "The payroll export goes to the accounting share every Monday morning."


def test_context_search_answers_typed_untrusted_items(client, alice):
    created = store(client, alice, FACT)
    response = client.post("/api/v1/context/search",
                           json={"query": "payroll export accounting"}, headers=alice)
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["id"] for r in results] == [f"assertion:{created['assertionId']}"]
    (item,) = results
    assert item["trust"] == "untrusted-data" and item["content"] == FACT
    assert item["kind"] == "assertion" and item["score"] > 0
    assert set(item["foundBy"]) == {"assertions", "memories"}
    assert item["details"]["memoryId"] == created["id"]


def test_context_get_of_a_memory_returns_its_evidence(client, alice):
    created = store(client, alice, FACT)
    response = client.get(f"/api/v1/context/memory:{created['id']}", headers=alice)
    assert response.status_code == 200
    item = response.json()
    assert item["id"] == f"memory:{created['id']}" and item["trust"] == "untrusted-data"
    assert item["content"] == FACT and item["score"] is None
    assert item["details"]["assertionId"] == created["assertionId"]
    (evidence,) = item["details"]["evidence"]
    assert evidence["excerpt"] == FACT and evidence["memoryId"] == created["id"]
    assert evidence["sourceKind"] == "memory" and evidence["sourceId"]


def test_context_get_of_an_assertion_returns_its_provenance(client, alice):
    created = store(client, alice, FACT)
    response = client.get(f"/api/v1/context/assertion:{created['assertionId']}", headers=alice)
    assert response.status_code == 200
    item = response.json()
    assert item["kind"] == "assertion" and item["trust"] == "untrusted-data"
    details = item["details"]
    assert details["audience"] == {"kind": "team", "key": "default"}   # shared by default
    assert details["reviewState"] == "policy_approved"
    assert [e["memoryId"] for e in details["evidence"]] == [created["id"]]


def test_context_search_finds_the_callers_session_history(client, alice, database_url):
    message = add_message(database_url, session="s-1", user="alice",
                           content="Remind me that the payroll export moved to Tuesday.")
    response = client.post("/api/v1/context/search",
                           json={"query": "payroll export moved", "context": {"sessionKey": "s-1"}},
                           headers=alice)
    assert response.status_code == 200
    items = {r["id"]: r for r in response.json()["results"]}
    assert items[f"message:{message}"]["trust"] == "untrusted-data"
    got = client.get(f"/api/v1/context/message:{message}", headers=alice)
    assert got.status_code == 200 and got.json()["details"]["sessionKey"] == "s-1"


def test_another_users_session_history_is_not_found(client, alice, database_url):
    message = add_message(database_url, session="s-bob", user="bob",
                           content="Bob's payroll question about the export.")
    search = client.post("/api/v1/context/search",
                         json={"query": "payroll export question"}, headers=alice)
    assert f"message:{message}" not in [r["id"] for r in search.json()["results"]]
    assert client.get(f"/api/v1/context/message:{message}", headers=alice).status_code == 404


def test_every_context_item_is_marked_untrusted(client, alice, database_url):
    store(client, alice, FACT)
    store(client, alice, "The accounting share is mounted at /mnt/acct on the export host.")
    add_message(database_url, session="s-1", user="alice",
                 content="Please check the accounting export log.")
    results = client.post("/api/v1/context/search",
                          json={"query": "accounting export", "depth": "deep",
                                "context": {"sessionKey": "s-1"}},
                          headers=alice).json()["results"]
    assert len(results) >= 3
    assert {r["trust"] for r in results} == {"untrusted-data"}


def test_one_fact_found_several_ways_is_one_result(client, alice, database_url):
    """The same fact as an assertion (found by the assertion and the memory arm) and as a
    session message saying the same: one result, every source that found it, and the other
    id it was found as."""
    created = store(client, alice, FACT)
    message = add_message(database_url, session="s-1", user="alice", content=FACT)
    response = client.post("/api/v1/context/search",
                           json={"query": "payroll export accounting",
                                 "context": {"sessionKey": "s-1"}}, headers=alice)
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["id"] for r in results] == [f"assertion:{created['assertionId']}"]
    (item,) = results
    assert set(item["foundBy"]) == {"assertions", "memories", "history"}
    assert item["details"]["alsoFoundAs"] == [f"message:{message}"]


def test_a_deep_search_recalls_what_the_normal_depth_leaves_out(client, alice):
    """Twelve memories answer the question better than the one asked for: a normal search
    (8 results) leaves that one out, a deep search (20, more per source) brings it back."""
    for n in range(12):
        store(client, alice, f"Release checklist item {n}: the release checklist says to tag "
                             f"release {n} before the release checklist review.")
    wanted = store(client, alice, "The checklist owner for releases is Jonas.")
    question = {"query": "release checklist"}
    normal = client.post("/api/v1/context/search", json=question, headers=alice).json()
    deep = client.post("/api/v1/context/search", json={**question, "depth": "deep"},
                       headers=alice).json()
    wanted_ids = {f"memory:{wanted['id']}", f"assertion:{wanted['assertionId']}"}
    assert len(normal["results"]) == 8
    assert not {r["id"] for r in normal["results"]} & wanted_ids
    assert len(deep["results"]) > 8
    assert {r["id"] for r in deep["results"]} & wanted_ids
