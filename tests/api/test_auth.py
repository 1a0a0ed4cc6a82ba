"""Bearer authentication and scopes: 401 for no valid key, 403 naming the missing scope,
``memory:read`` and ``memory:write`` independent, ``admin`` for ``/internal/``."""

from __future__ import annotations

import psycopg
import pytest

from memory_platform.features.apikeys import create_key, revoke_key
from tests.api.conftest import (
    ADMIN,
    READ,
    WRITE,
    assert_error,
    bearer,
    row_counts,
    store,
)

UUID0 = "00000000-0000-0000-0000-000000000000"

# (method, path, json body) of every protected operation, with a valid body where it has one.
READ_ROUTES = [
    ("GET", "/api/v1/memory?query=deploy", None),
    ("GET", f"/api/v1/memory/{UUID0}", None),
    ("POST", "/api/v1/context/search", {"query": "deploy"}),
    ("GET", f"/api/v1/context/memory:{UUID0}", None),
]
WRITE_ROUTES = [
    ("POST", "/api/v1/memory", {"content": "The deploy runs every Tuesday at noon."}),
    ("POST", "/api/v1/feedback/injected", {"runId": "run-1", "assertionIds": [UUID0]}),
    ("POST", "/api/v1/feedback/cited", {"runId": "run-1", "responseText": "deploy on Tuesday"}),
]
ADMIN_ROUTES = [
    ("GET", "/internal/memory/status", None),
    ("POST", "/internal/memory/reembed", {"limit": 10}),
]
MEMBERSHIP_ROUTES = [
    ("GET", "/api/v1/channels/members", None),
    ("POST", "/api/v1/channels/members", {"channelKey": "slack:C1", "userId": "bob"}),
    ("DELETE", "/api/v1/channels/members?channelKey=slack:C1&userId=bob", None),
    ("GET", "/api/v1/sessions/participants?sessionKey=s-1", None),
    ("POST", "/api/v1/sessions/participants", {"sessionKey": "s-1", "userId": "bob"}),
]
PROTECTED = READ_ROUTES + WRITE_ROUTES + ADMIN_ROUTES + MEMBERSHIP_ROUTES

# Every test here only reads what it made itself: one database and one app for the module.
pytestmark = pytest.mark.shared_app



def _call(client, method: str, path: str, body, headers: dict[str, str] | None = None):
    return client.request(method, path, json=body, headers=headers or {})


def _ids(routes):
    return [f"{m} {p.split('?')[0]}" for m, p, _ in routes]


@pytest.mark.parametrize(("method", "path", "body"), PROTECTED, ids=_ids(PROTECTED))
def test_a_request_without_authorization_is_401(client, method, path, body):
    error = assert_error(_call(client, method, path, body), 401, "unauthorized")
    assert "bearer" in error["message"].lower()


@pytest.mark.parametrize("header", [
    "Basic YWxpY2U6c2VjcmV0", "Token mpk_abc_def", "Bearer", "Bearer    ", "mpk_abc_def",
])
def test_a_header_that_is_not_a_bearer_token_is_401(client, header):
    response = client.get("/api/v1/memory", params={"query": "deploy"},
                          headers={"Authorization": header})
    assert_error(response, 401, "unauthorized")


@pytest.mark.parametrize("token", [
    "mpk_000000000000_" + "x" * 43, "not-a-key", "mpk_", "mpk__", "mpk_" + "a" * 300,
])
def test_an_unknown_token_is_401(client, token):
    response = client.get("/api/v1/memory", params={"query": "deploy"}, headers=bearer(token))
    assert_error(response, 401, "unauthorized")


def test_a_token_with_a_wrong_secret_is_401(client, make_key):
    token = make_key("alice", (READ,))
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    response = client.get("/api/v1/memory", params={"query": "deploy"}, headers=bearer(forged))
    assert_error(response, 401, "unauthorized")


def test_a_revoked_token_is_401_on_the_next_request(client, database_url):
    with psycopg.connect(database_url) as connection:
        key, token = create_key(connection, instance_key="default", user_id="alice",
                                scopes=(READ,))
        connection.commit()
    assert client.get("/api/v1/memory", params={"query": "deploy"},
                      headers=bearer(token)).status_code == 200
    with psycopg.connect(database_url) as connection:
        revoke_key(connection, str(key.id))
        connection.commit()
    response = client.get("/api/v1/memory", params={"query": "deploy"}, headers=bearer(token))
    error = assert_error(response, 401, "unauthorized")
    assert "revoked" in error["message"]


def test_an_expired_token_is_401(client, database_url, make_key):
    token = make_key("alice", (READ,))
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("UPDATE api_keys SET expires_at = now() - interval '1 second'"
                           " WHERE token_prefix = %s", (token[: token.index("_", 4)],))
    response = client.get("/api/v1/memory", params={"query": "deploy"}, headers=bearer(token))
    assert_error(response, 401, "unauthorized")


@pytest.mark.parametrize(("method", "path", "body"), WRITE_ROUTES, ids=_ids(WRITE_ROUTES))
def test_a_read_only_key_gets_403_naming_memory_write(client, make_key, database_url,
                                                       method, path, body):
    before = row_counts(database_url)
    response = _call(client, method, path, body, bearer(make_key("alice", (READ,))))
    error = assert_error(response, 403, "missing_scope")
    assert "memory:write" in error["message"]
    assert error["details"] == {"required": WRITE, "granted": [READ]}
    assert row_counts(database_url) == before


@pytest.mark.parametrize(("method", "path", "body"), READ_ROUTES, ids=_ids(READ_ROUTES))
def test_a_write_only_key_gets_403_naming_memory_read(client, make_key, method, path, body):
    response = _call(client, method, path, body, bearer(make_key("alice", (WRITE,))))
    error = assert_error(response, 403, "missing_scope")
    assert "memory:read" in error["message"]
    assert error["details"] == {"required": READ, "granted": [WRITE]}


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_ROUTES, ids=_ids(ADMIN_ROUTES))
def test_a_key_without_admin_gets_403_on_internal_routes(client, make_key, method, path, body):
    response = _call(client, method, path, body, bearer(make_key("alice", (READ, WRITE))))
    error = assert_error(response, 403, "missing_scope")
    assert "admin" in error["message"]
    assert error["details"]["required"] == ADMIN


def test_the_scope_check_comes_before_reading_the_body(client, make_key):
    response = client.post("/api/v1/memory", content=b"{not json",
                           headers={**bearer(make_key("alice", (READ,))),
                                    "Content-Type": "application/json"})
    assert_error(response, 403, "missing_scope")


def test_a_write_only_key_can_write_but_not_read_back(client, make_key):
    writer = bearer(make_key("alice", (WRITE,)))
    created = store(client, writer, "The staging database lives in Frankfurt.")
    assert_error(client.get(f"/api/v1/memory/{created['id']}", headers=writer), 403)


def test_a_read_only_key_can_read_what_the_same_user_wrote(client, make_key):
    created = store(client, bearer(make_key("alice", (WRITE,))),
                    "The reporting replica lives in Helsinki.")
    reader = bearer(make_key("alice", (READ,)))
    response = client.get(f"/api/v1/memory/{created['id']}", headers=reader)
    assert response.status_code == 200 and response.json()["id"] == created["id"]


def test_an_admin_only_key_reads_status_but_not_memories(client, make_key):
    admin = bearer(make_key("ops", (ADMIN,)))
    assert client.get("/internal/memory/status", headers=admin).status_code == 200
    assert_error(client.get("/api/v1/memory", params={"query": "x"}, headers=admin), 403)


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics", "/openapi.json"])
def test_public_routes_need_no_key(client, path):
    assert client.get(path).status_code == 200
