"""Search filters over HTTP: GET /api/v1/memory (the filter as JSON in the query string) and
POST /api/v1/context/search (a filter object); bad filters are 400 naming the field; a
filter never shows another user's private memory."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.api.conftest import ALL_SCOPES, assert_error, bearer, store

pytestmark = pytest.mark.shared_app


@pytest.fixture
def task() -> str:
    return f"T-{uuid.uuid4().hex[:8]}"


def _search(client, headers, **params):
    if isinstance(params.get("filter"), dict):
        params["filter"] = json.dumps(params["filter"])
    response = client.get("/api/v1/memory", params={"query": "rollout plan", "limit": 50,
                                                    **params}, headers=headers)
    assert response.status_code == 200, response.text
    return [hit["id"] for hit in response.json()["results"]]


def test_rest_filters_by_subject_ref_metadata_time_and_source(client, make_key, task):
    alice = bearer(make_key("alice", ALL_SCOPES))
    one = store(client, alice, f"The rollout plan for {task} starts in spring.",
                subjectRefs={"taskId": task}, occurredAt="2024-03-01T10:00:00Z")["id"]
    two = store(client, alice, f"The rollout plan for {task} was signed off in May.",
                subjectRefs={"taskId": task}, occurredAt="2024-05-01T10:00:00Z")["id"]
    mine = {"subjectRefs.taskId": {"eq": task}}
    assert set(_search(client, alice, filter=mine)) == {one, two}
    assert _search(client, alice, filter=mine, occurredAfter="2024-04-01T00:00:00Z") == [two]
    assert _search(client, alice, filter=mine, occurredBefore="2024-04-01T00:00:00+00:00") \
        == [one]
    assert _search(client, alice, filter=mine, createdBefore="2020-01-01T00:00:00Z") == []
    assert set(_search(client, alice, filter=mine, sourceTypes="fact,manual")) == {one, two}
    assert _search(client, alice, filter=mine, sourceTypes="dream") == []
    both = {"and": [mine, {"metadata.writtenVia": {"eq": "api"}},
                    {"not": {"metadata.writer": {"exists": True}}}]}
    assert set(_search(client, alice, filter=both)) == {one, two}


def test_context_search_takes_a_filter_object(client, make_key, task):
    alice = bearer(make_key("alice", ALL_SCOPES))
    one = store(client, alice, f"The rollout plan for {task} starts in spring.",
                subjectRefs={"taskId": task})["id"]
    response = client.post("/api/v1/context/search", headers=alice, json={
        "query": "rollout plan", "filter": {"subjectRefs.taskId": {"in": [task, "x"]}},
        "sourceTypes": ["fact"], "createdAfter": "2020-01-01T00:00:00Z"})
    assert response.status_code == 200, response.text
    assert [item["details"]["memoryId"] for item in response.json()["results"]] == [one]


def test_a_filter_never_shows_another_users_private_memory(client, make_key, task):
    alice = bearer(make_key("alice", ALL_SCOPES))
    bob = bearer(make_key("bob", ALL_SCOPES))
    private = store(client, alice, f"The rollout plan for {task} is secret.",
                    visibility="private", subjectRefs={"taskId": task})["id"]
    naming = {"or": [{"subjectRefs.taskId": {"eq": task}},
                     {"not": {"subjectRefs.taskId": {"eq": task}}}]}
    assert private in _search(client, alice, filter=naming)
    assert private not in _search(client, bob, filter=naming)
    assert _search(client, bob, filter={"subjectRefs.taskId": {"eq": task}}) == []
    assert _search(client, bob, filter={"subjectRefs.taskId": {"eq": task}},
                   scope="private") == []
    response = client.post("/api/v1/context/search", headers=bob, json={
        "query": "rollout plan", "filter": {"subjectRefs.taskId": {"eq": task}}})
    assert response.status_code == 200 and response.json()["results"] == []


@pytest.mark.parametrize(("params", "field"), [
    ({"filter": "{not json"}, "filter"),
    ({"filter": json.dumps({"metadata.a": {"like": 1}})}, "filter.metadata.a.like"),
    ({"filter": json.dumps({"metadata.a;drop": {"eq": 1}})}, "filter.metadata.a;drop"),
    ({"filter": json.dumps({"metadata.a": {"in": "x"}})}, "filter.metadata.a.in"),
    ({"filter": json.dumps({"not": {"not": {"not": {"not": {"not": {"metadata.a": {
        "eq": 1}}}}}}})}, "filter.not.not.not.not"),
    ({"occurredAfter": "2024-01-01"}, "occurredAfter"),
    ({"createdBefore": "soon"}, "createdBefore"),
    ({"sourceTypes": "fact,poem"}, "sourceTypes"),
])
def test_a_bad_filter_is_400_naming_the_field(client, make_key, params, field):
    alice = bearer(make_key("alice", ALL_SCOPES))
    response = client.get("/api/v1/memory", params={"query": "plan", **params}, headers=alice)
    error = assert_error(response, 400)
    assert error["details"]["field"] == field, error


@pytest.mark.parametrize(("body", "field"), [
    ({"filter": {"and": []}}, "filter.and"),
    ({"filter": {"subjectRefs.taskId": {"eq": {"x": 1}}}}, "filter.subjectRefs.taskId.eq"),
    ({"sourceTypes": ["poem"]}, "sourceTypes"),
    ({"occurredAfter": "2024-05-01T00:00:00Z", "occurredBefore": "2024-01-01T00:00:00Z"},
     "occurredAfter"),
])
def test_a_bad_context_filter_is_400_naming_the_field(client, make_key, body, field):
    alice = bearer(make_key("alice", ALL_SCOPES))
    response = client.post("/api/v1/context/search", headers=alice,
                           json={"query": "plan", **body})
    error = assert_error(response, 400)
    assert error["details"]["field"] == field, error


def test_a_clients_own_metadata_is_stored_and_filterable_but_not_the_platforms_keys(
        client, make_key, task):
    alice = bearer(make_key("alice", ALL_SCOPES))
    tagged = store(client, alice, f"The rollout plan for {task} needs a canary.",
                   metadata={"project": task, "tags": ["canary", "eu"]})["id"]
    store(client, alice, f"The rollout plan for {task} has no canary yet.")
    assert _search(client, alice, filter={"metadata.project": {"eq": task}}) == [tagged]
    assert _search(client, alice, filter={"and": [{"metadata.tags": {"in": ["eu"]}},
                                                  {"metadata.project": {"eq": task}}]}) \
        == [tagged]
    for bad in ({"writtenVia": "mcp"}, {"apiKeyId": "x"}, {"memoryClass": "flush"}, [1],
                "text", {"password": "hunter2-hunter2-hunter2"}):
        response = client.post("/api/v1/memory", headers=alice,
                               json={"content": f"Spoofed {task}", "metadata": bad})
        assert response.status_code in (400, 422), (bad, response.text)
    assert _search(client, alice, filter={"metadata.writtenVia": {"eq": "mcp"}}) == []
