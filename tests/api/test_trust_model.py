"""Who may act where (docs/security.md, "The trust model"; review findings F1 and F2): a user
key names a channel or room only where its user is a member and a session only where its user
takes part; a runtime key acts for the user it names, through the same visibility rule;
memberships are managed by admin and runtime keys of their own instance only."""

from __future__ import annotations

import psycopg
import pytest

from tests.api.conftest import (
    ADMIN,
    ALL_SCOPES,
    READ,
    WRITE,
    add_member,
    add_message,
    assert_error,
    bearer,
    row_counts,
    store,
)

THREAD = "slack:C1/T9:1712.5"          # channel keys may hold ':' and '/'
ROOM = "room-7"
CHANNEL_FACT = "The incident bridge for the payments outage is on the blue line."
MEMBERS = "/api/v1/channels/members"
PARTICIPANTS = "/api/v1/sessions/participants"


@pytest.fixture
def bob(make_key) -> dict[str, str]:
    return bearer(make_key("bob", ALL_SCOPES))


@pytest.fixture
def runtime(make_key) -> dict[str, str]:
    return bearer(make_key(None, (READ, WRITE), runtime=True))


def _search(client, headers, query: str, **context):
    return client.get("/api/v1/memory", params={"query": query, **context}, headers=headers)


def _context_search(client, headers, query: str, **context):
    return client.post("/api/v1/context/search", json={"query": query, "context": context},
                       headers=headers)


def _ids(response) -> list[str]:
    assert response.status_code == 200, response.text
    return [r["id"] for r in response.json()["results"]]


# --- channels (F2) -------------------------------------------------------------------------
@pytest.mark.parametrize("route", ["search", "context_search", "write", "injected"])
def test_f2_a_user_key_naming_a_channel_it_is_not_a_member_of_gets_403_and_nothing_is_written(
        client, alice, bob, database_url, route):
    add_member(database_url, THREAD, "bob")
    planted = store(client, bob, CHANNEL_FACT, visibility="channel",
                    context={"channelThreadKey": THREAD})
    before = row_counts(database_url)
    context = {"channelThreadKey": THREAD}
    response = {
        "search": lambda: _search(client, alice, "incident bridge payments", **context),
        "context_search": lambda: _context_search(client, alice, "incident bridge", **context),
        "write": lambda: client.post("/api/v1/memory", headers=alice, json={
            "content": "The bridge moved to the red line.", "visibility": "channel",
            "context": context}),
        "injected": lambda: client.post("/api/v1/feedback/injected", headers=alice, json={
            "runId": "run-1", "assertionIds": [planted["assertionId"]], "context": context}),
    }[route]()
    error = assert_error(response, 403, "not_a_member")
    assert THREAD in error["message"] and "member" in error["message"]
    assert error["details"] == {"channels": [THREAD]}
    assert CHANNEL_FACT not in response.text
    assert row_counts(database_url) == before


def test_f2_after_members_add_the_channel_is_readable_and_writable(client, alice, bob,
                                                                   database_url, make_key):
    add_member(database_url, THREAD, "bob")
    planted = store(client, bob, CHANNEL_FACT, visibility="channel",
                    context={"channelThreadKey": THREAD})
    assert_error(_search(client, alice, "incident bridge payments", channelThreadKey=THREAD),
                 403, "not_a_member")

    admin = bearer(make_key("ops", (ADMIN,)))
    added = client.post(MEMBERS, json={"channelKey": THREAD, "userId": "alice"}, headers=admin)
    assert added.status_code == 201, added.text

    found = _search(client, alice, "incident bridge payments", channelThreadKey=THREAD)
    assert planted["id"] in _ids(found)
    assert f"assertion:{planted['assertionId']}" in _ids(
        _context_search(client, alice, "incident bridge payments", channelThreadKey=THREAD))
    written = store(client, alice, "The bridge moved to the red line.", visibility="channel",
                    context={"channelThreadKey": THREAD})
    assert written["audience"] == {"kind": "channel", "key": THREAD}


def test_f2_membership_of_a_room_does_not_open_its_threads(client, alice, database_url):
    add_member(database_url, ROOM, "alice")
    assert _search(client, alice, "anything", groupRoomId=ROOM).status_code == 200
    error = assert_error(_search(client, alice, "anything", groupRoomId=ROOM,
                                 channelThreadKey=THREAD), 403, "not_a_member")
    assert error["details"] == {"channels": [THREAD]}


# --- sessions (F1) -------------------------------------------------------------------------
def test_f1_a_user_key_naming_another_users_session_gets_403(client, alice, bob, database_url):
    message = add_message(database_url, session="web:bob", user="bob",
                           content="Bob asks about his salary review in March.")
    before = row_counts(database_url)
    search = _context_search(client, alice, "salary review March", sessionKey="web:bob")
    error = assert_error(search, 403, "foreign_session")
    assert "web:bob" in error["message"] and "another user" in error["message"]
    assert "salary" not in search.text
    write = client.post("/api/v1/memory", headers=alice, json={
        "content": "Planted into bob's session.", "context": {"sessionKey": "web:bob"}})
    assert_error(write, 403, "foreign_session")
    assert row_counts(database_url) == before
    found = _ids(_context_search(client, bob, "salary review March", sessionKey="web:bob"))
    assert f"message:{message}" in found


def test_f1_an_unused_session_is_started_by_its_first_append_not_its_first_reader(
        client, alice, bob, make_key):
    """Review of 7c85f33, finding 1: naming an unused session in a read claims nothing;
    the first append as oneself starts it."""
    admin = bearer(make_key("ops", (ADMIN,)))

    def participants() -> list[tuple[str, str]]:
        listed = client.get(PARTICIPANTS, params={"sessionKey": "web:new"}, headers=admin)
        assert listed.status_code == 200, listed.text
        return [(p["userId"], p["role"]) for p in listed.json()["participants"]]

    assert _search(client, alice, "anything", sessionKey="web:new").status_code == 200
    assert _search(client, bob, "anything", sessionKey="web:new").status_code == 200
    assert participants() == []
    appended = client.post("/api/v1/sessions/web:new/items", headers=alice,
                           json={"items": [{"role": "user", "content": "hello"}]})
    assert appended.status_code == 201, appended.text
    assert_error(_search(client, bob, "anything", sessionKey="web:new"), 403, "foreign_session")
    assert participants() == [("alice", "owner")]
    # An admin (or the runtime) may let bob take part; then bob may name it.
    added = client.post(PARTICIPANTS, json={"sessionKey": "web:new", "userId": "bob"},
                        headers=admin)
    assert added.status_code == 201 and added.json()["added"] is True
    assert _search(client, bob, "anything", sessionKey="web:new").status_code == 200


# --- runtime keys --------------------------------------------------------------------------
def test_a_runtime_key_acting_for_alice_reads_what_alice_may_read_and_not_bobs_rows(
        client, alice, bob, runtime):
    mine = store(client, alice, "Alice parks in the north garage, level two.",
                 visibility="private")
    theirs = store(client, bob, "Bob parks in the north garage, level five.",
                   visibility="private")

    for_alice = _ids(_search(client, runtime, "north garage parking level", userId="alice"))
    assert mine["id"] in for_alice and theirs["id"] not in for_alice
    context = _ids(_context_search(client, runtime, "north garage parking level",
                                   userId="alice"))
    assert f"assertion:{mine['assertionId']}" in context
    assert f"assertion:{theirs['assertionId']}" not in context
    exact = client.get(f"/api/v1/memory/{mine['id']}", params={"userId": "alice"},
                       headers=runtime)
    assert exact.status_code == 200
    assert_error(client.get(f"/api/v1/memory/{theirs['id']}", params={"userId": "alice"},
                            headers=runtime), 404, "not_found")


def test_a_runtime_key_without_a_user_is_a_system_context(client, alice, runtime):
    mine = store(client, alice, "Alice parks in the north garage, level two.")
    team = store(client, alice, "The team parks in the south garage.", visibility="team")
    found = _ids(_search(client, runtime, "garage parking level"))
    assert mine["id"] not in found and team["id"] not in found
    assert_error(client.get(f"/api/v1/memory/{mine['id']}", headers=runtime), 404)


def test_a_runtime_key_names_the_real_conversation_and_its_append_registers_the_session(
        client, runtime, make_key, database_url):
    add_member(database_url, THREAD, "bob")
    bob = bearer(make_key("bob", ALL_SCOPES))
    planted = store(client, bob, CHANNEL_FACT, visibility="channel",
                    context={"channelThreadKey": THREAD, "sessionKey": "slack:bob"})
    found = _ids(_search(client, runtime, "incident bridge payments", userId="carol",
                         channelThreadKey=THREAD, sessionKey="slack:bob"))
    assert planted["id"] in found

    def taking_part() -> set[str]:
        listed = client.get(PARTICIPANTS, params={"sessionKey": "slack:bob"}, headers=runtime)
        return {p["userId"] for p in listed.json()["participants"]}

    assert taking_part() == set()  # reads (and memory writes) join nothing
    appended = client.post("/api/v1/sessions/slack:bob/items", headers=runtime, json={
        "context": {"userId": "carol", "channelThreadKey": THREAD},
        "items": [{"role": "user", "content": "I'm on the bridge."},
                  {"role": "user", "content": "Me too.", "authorUserId": "bob"}]})
    assert appended.status_code == 201, appended.text
    assert taking_part() == {"bob", "carol"}


@pytest.mark.parametrize(("method", "path", "kwargs"), [
    ("GET", "/api/v1/memory", {"params": {"query": "x", "userId": "bob"}}),
    ("GET", "/api/v1/memory/00000000-0000-0000-0000-000000000000", {"params": {"userId": "bob"}}),
    ("GET", "/api/v1/context/memory:00000000-0000-0000-0000-000000000000",
     {"params": {"userId": "bob"}}),
    ("POST", "/api/v1/context/search", {"json": {"query": "x", "context": {"userId": "bob"}}}),
], ids=["search", "get", "context-get", "context-search"])
def test_a_user_key_naming_a_user_gets_400(client, alice, method, path, kwargs):
    error = assert_error(client.request(method, path, headers=alice, **kwargs), 400,
                         "validation_error")
    assert "userId" in str(error)


# --- managing membership ---------------------------------------------------------------------
@pytest.mark.parametrize(("method", "path", "kwargs"), [
    ("GET", MEMBERS, {}),
    ("POST", MEMBERS, {"json": {"channelKey": THREAD, "userId": "alice"}}),
    ("DELETE", MEMBERS, {"params": {"channelKey": THREAD, "userId": "alice"}}),
    ("GET", PARTICIPANTS, {"params": {"sessionKey": "s"}}),
    ("POST", PARTICIPANTS, {"json": {"sessionKey": "s", "userId": "alice"}}),
], ids=["list", "add", "remove", "participants", "participate"])
def test_membership_routes_need_admin_or_runtime(client, alice, make_key, database_url,
                                                 method, path, kwargs):
    plain = bearer(make_key("alice", (READ, WRITE)))
    error = assert_error(client.request(method, path, headers=plain, **kwargs), 403,
                         "missing_scope")
    assert error["details"]["required"] == ["admin", "runtime"]
    with psycopg.connect(database_url) as connection:
        assert connection.execute("SELECT count(*) FROM agent_channel_members").fetchone() == (0,)
    assert client.get("/openapi.json").json()["paths"][path][method.lower()]["description"] \
        == "Needs the `admin` or `runtime` scope."


def test_members_add_list_remove_round_trip(client, runtime, database_url):
    member = {"channelKey": THREAD, "userId": "alice"}
    first = client.post(MEMBERS, json=member, headers=runtime)
    assert first.status_code == 201 and first.json() == {**member, "changed": True}
    again = client.post(MEMBERS, json=member, headers=runtime)
    assert again.status_code == 200 and again.json()["changed"] is False
    client.post(MEMBERS, json={"channelKey": ROOM, "userId": "bob"}, headers=runtime)

    listed = client.get(MEMBERS, params={"channelKey": THREAD}, headers=runtime).json()
    assert [(m["channelKey"], m["userId"]) for m in listed["members"]] == [(THREAD, "alice")]
    assert listed["members"][0]["addedBy"].startswith("runtime key mpk_")
    everyone = client.get(MEMBERS, headers=runtime).json()["members"]
    assert {(m["channelKey"], m["userId"]) for m in everyone} == {(THREAD, "alice"),
                                                                 (ROOM, "bob")}

    removed = client.delete(MEMBERS, params=member, headers=runtime)
    assert removed.status_code == 200 and removed.json()["changed"] is True
    error = assert_error(client.delete(MEMBERS, params=member, headers=runtime), 404,
                         "not_found")
    assert THREAD in error["message"]
    assert client.get(MEMBERS, params={"userId": "alice"}, headers=runtime).json() == \
        {"members": []}


@pytest.mark.parametrize(("method", "path", "kwargs"), [
    ("POST", MEMBERS, {"json": {"channelKey": THREAD}}),
    ("POST", MEMBERS, {"json": {"channelKey": "", "userId": "alice"}}),
    ("POST", MEMBERS, {"json": {"channelKey": THREAD, "userId": "alice", "instance": "x"}}),
    ("DELETE", MEMBERS, {"params": {"channelKey": THREAD}}),
    ("GET", PARTICIPANTS, {}),
    ("POST", PARTICIPANTS, {"json": {"sessionKey": "s", "userId": "a", "role": "owner"}}),
], ids=["no-user", "empty-channel", "instance", "remove-no-user", "no-session", "role"])
def test_bad_membership_requests_get_400_and_change_nothing(client, runtime, database_url,
                                                             method, path, kwargs):
    assert_error(client.request(method, path, headers=runtime, **kwargs), 400,
                 "validation_error")
    with psycopg.connect(database_url) as connection:
        assert connection.execute("SELECT (SELECT count(*) FROM agent_channel_members)"
                                  " + (SELECT count(*) FROM agent_session_participants)"
                                  ).fetchone() == (0,)


def test_an_admin_of_acme_cannot_manage_members_of_default(client, alice, make_key,
                                                         database_url):
    add_member(database_url, THREAD, "alice")
    acme_admin = bearer(make_key("ops", (ADMIN,), instance="acme"))
    acme_runtime = bearer(make_key(None, (READ,), instance="acme", runtime=True))
    bob = bearer(make_key("bob", ALL_SCOPES))

    added = client.post(MEMBERS, json={"channelKey": THREAD, "userId": "bob"},
                        headers=acme_admin)
    assert added.status_code == 201        # a membership of acme's own channel of that name
    assert_error(_search(client, bob, "anything", channelThreadKey=THREAD), 403, "not_a_member")

    for headers in (acme_admin, acme_runtime):
        assert_error(client.delete(MEMBERS, params={"channelKey": THREAD, "userId": "alice"},
                                   headers=headers), 404, "not_found")
        listed = client.get(MEMBERS, params={"channelKey": THREAD}, headers=headers).json()
        assert [m["userId"] for m in listed["members"]] == ["bob"]
    assert _search(client, alice, "anything", channelThreadKey=THREAD).status_code == 200
    with psycopg.connect(database_url) as connection:
        rows = connection.execute("SELECT instance_key, user_id FROM agent_channel_members"
                                  " ORDER BY 1, 2").fetchall()
    assert rows == [("acme", "bob"), ("default", "alice")]


@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/api/v1/memory", {"content": "The lobby door code changes monthly."}),
    ("POST", "/api/v1/memory", {"content": "The lobby door code changes monthly.",
                                "visibility": "team"}),
    ("POST", "/api/v1/memory", {"content": "The lobby door code changes monthly.",
                                "context": {"sessionKey": "web:x"}}),
    ("POST", "/api/v1/context/search", {"query": "door code",
                                        "context": {"sessionKey": "web:x",
                                                    "channelThreadKey": THREAD}}),
    ("POST", "/api/v1/feedback/injected",
     {"runId": "r-1", "assertionIds": ["00000000-0000-0000-0000-000000000000"],
      "context": {"sessionKey": "web:x"}}),
    ("POST", "/api/v1/feedback/cited", {"runId": "r-1", "responseText": "door code"}),
], ids=["private", "team", "session", "context-search", "injected", "cited"])
def test_a_runtime_key_without_a_user_gets_an_answer_never_a_500(client, runtime, method,
                                                                  path, body):
    response = client.request(method, path, json=body, headers=runtime)
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert_error(response, response.status_code)
