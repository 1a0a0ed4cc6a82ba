"""No request can name the user it acts as: the user always comes from the API key. Fields
or parameters that try (``userId``, ``user``, ``user_id``, also inside ``context``) are
rejected, and nothing is written."""

from __future__ import annotations

import uuid

import pytest

from tests.api.conftest import assert_error, row_counts

pytestmark = pytest.mark.shared_app


@pytest.mark.parametrize("body", [
    {"content": "The release train leaves on Fridays.", "userId": "bob"},
    {"content": "The release train leaves on Fridays.", "user": "bob"},
    {"content": "The release train leaves on Fridays.", "user_id": "bob"},
    {"content": "The release train leaves on Fridays.", "context": {"userId": "bob"}},
    {"content": "The release train leaves on Fridays.", "context": {"user": "bob"}},
], ids=["userId", "user", "user_id", "context.userId", "context.user"])
def test_a_write_naming_a_user_is_rejected_and_writes_nothing(client, alice, database_url, body):
    before = row_counts(database_url)
    error = assert_error(client.post("/api/v1/memory", json=body, headers=alice), 400,
                         "validation_error")
    assert "user" in str(error["details"]).lower()
    assert row_counts(database_url) == before


@pytest.mark.parametrize("param", ["userId", "user", "user_id"])
def test_a_search_naming_a_user_is_rejected(client, alice, param):
    response = client.get("/api/v1/memory", params={"query": "release", param: "bob"},
                          headers=alice)
    assert_error(response, 400, "validation_error")


@pytest.mark.parametrize(("path", "body"), [
    ("/api/v1/context/search", {"query": "release", "userId": "bob"}),
    ("/api/v1/context/search", {"query": "release", "context": {"userId": "bob"}}),
    ("/api/v1/feedback/injected", {"runId": "r1", "assertionIds": [str(uuid.uuid4())],
                                   "userId": "bob"}),
    ("/api/v1/feedback/cited", {"runId": "r1", "responseText": "x", "userId": "bob"}),
])
def test_context_and_feedback_bodies_naming_a_user_are_rejected(client, alice, database_url,
                                                                path, body):
    before = row_counts(database_url)
    assert_error(client.post(path, json=body, headers=alice), 400, "validation_error")
    assert row_counts(database_url) == before
