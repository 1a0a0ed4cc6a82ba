"""Exact reads under the conversation context search accepts (issue 32.1, seed row 42): what
a search found under a channel's context reads exactly, from the memory and the context
routes, under the same context; without it a runtime sees it as a missing id, and naming a
channel the key's user is not a member of is refused."""

from __future__ import annotations

from tests.api.conftest import ALL_SCOPES, READ, add_member, assert_error, bearer, store

FACT = "The release train of the platform channel leaves every Tuesday at 10:00."
CHANNEL = {"channelThreadKey": "slack:C7:T7"}


def test_what_search_found_under_a_channel_context_reads_exactly_under_it(
        client, alice, make_key, database_url):
    add_member(database_url, CHANNEL["channelThreadKey"], "alice")
    created = store(client, alice, FACT, visibility="channel", context=CHANNEL)
    question = "when does the release train leave"
    # The channel's runtime (a runtime key, acting for no user) sees the channel's memories
    # only under the channel's context: search, then the exact reads.
    runtime = bearer(make_key(None, (READ,), runtime=True))
    hits = client.get("/api/v1/memory", params={"query": question, **CHANNEL},
                      headers=runtime).json()["results"]
    assert created["id"] in [h["id"] for h in hits]
    exact = client.get(f"/api/v1/memory/{created['id']}", params=CHANNEL, headers=runtime)
    assert exact.status_code == 200, exact.text
    assert exact.json()["content"] == FACT and exact.json()["visibility"] == "channel"
    assert_error(client.get(f"/api/v1/memory/{created['id']}", headers=runtime), 404)

    found = client.post("/api/v1/context/search", headers=runtime, json={
        "query": question, "context": CHANNEL}).json()["results"]
    item = next(i for i in found if FACT in i["content"])
    read = client.get(f"/api/v1/context/{item['id']}", params=CHANNEL, headers=runtime)
    assert read.status_code == 200, read.text
    assert FACT in read.json()["content"]
    assert_error(client.get(f"/api/v1/context/{item['id']}", headers=runtime), 404)

    # A member names the channel too; someone who is not one is refused for naming it.
    member = client.get(f"/api/v1/memory/{created['id']}", params=CHANNEL, headers=alice)
    assert member.status_code == 200, member.text
    bob = bearer(make_key("bob", ALL_SCOPES))
    assert_error(client.get(f"/api/v1/memory/{created['id']}", params=CHANNEL, headers=bob),
                 403, "not_a_member")
    assert_error(client.get(f"/api/v1/context/{item['id']}", params=CHANNEL, headers=bob),
                 403, "not_a_member")


def test_an_exact_read_refuses_what_search_refuses(client, alice):
    assert_error(client.get("/api/v1/memory/00000000-0000-0000-0000-000000000000",
                            params={"channelThreadKey": ""}, headers=alice), 400)
    assert_error(client.get("/api/v1/memory/00000000-0000-0000-0000-000000000000",
                            params={"userId": "mallory"}, headers=alice), 400)
    assert_error(client.get("/api/v1/memory/00000000-0000-0000-0000-000000000000",
                            params={"unknown": "x"}, headers=alice), 400)
