"""GET /api/v1/events and the admin webhook routes over HTTP: another user's private events
are never listed, a cursor pages, a malformed cursor or unknown kind is a 400; webhook
registration refuses what the SSRF rule refuses and never answers a given secret."""

from __future__ import annotations

import pytest

from tests.api.conftest import (  # noqa: F401  (fixtures)
    ADMIN,
    READ,
    WRITE,
    api_settings,
    assert_error,
    bearer,
    client,
    database_url,
    make_key,
    store,
)


@pytest.fixture
def keys(make_key):  # noqa: F811
    return (bearer(make_key("alice", (READ, WRITE, ADMIN))),
            bearer(make_key("bob", (READ, WRITE))))


def page(client, headers, **params):  # noqa: F811
    response = client.get("/api/v1/events", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_feed_over_http(client, keys):  # noqa: F811
    alice, bob = keys
    private = store(client, alice, "Alice's private note about her dentist.",
                    visibility="private")
    team = [store(client, bob, f"Team build note number {n}.", visibility="team")
            for n in range(2)]

    everything = page(client, bob)
    memory_ids = {e.get("memoryId") for e in everything["events"]}
    assert private["id"] not in memory_ids
    assert {t["id"] for t in team} <= memory_ids
    assert all(e["audience"]["kind"] != "private" or e["audience"]["key"] == "bob"
               for e in everything["events"])
    assert private["id"] in {e.get("memoryId") for e in page(client, alice)["events"]}

    paged, cursor = [], None
    while True:
        answer = page(client, bob, limit=1, **({"after": cursor} if cursor else {}))
        if not answer["events"]:
            break
        paged += answer["events"]
        cursor = answer["nextCursor"]
    assert paged == everything["events"] and cursor == everything["nextCursor"]

    written = page(client, bob, kinds="memory.written")["events"]
    assert {e["kind"] for e in written} == {"memory.written"}

    assert_error(client.get("/api/v1/events", params={"after": "%%%"}, headers=bob), 400)
    assert_error(client.get("/api/v1/events", params={"kinds": "memory.eaten"},
                            headers=bob), 400)
    assert client.get("/api/v1/events").status_code == 401


def test_webhook_admin_routes(client, keys):  # noqa: F811
    alice, bob = keys
    for url in ("ftp://example.org/x", "http://169.254.169.254/latest",
                "http://127.0.0.1:9/hook"):
        assert_error(client.post("/internal/memory/webhooks", json={"url": url},
                                 headers=alice), 400)
    assert client.post("/internal/memory/webhooks", json={"url": "http://127.0.0.1/"},
                       headers=bob).status_code == 403
    response = client.get("/internal/memory/webhooks", headers=alice)
    assert response.status_code == 200 and response.json() == {"webhooks": []}
    assert_error(client.delete("/internal/memory/webhooks/0b9f3c1e-1111-4c1e-9b0a-"
                               "000000000000", headers=alice), 404)


REVIEW_TARGETS = ["http://100.100.100.200/latest/meta-data/", "http://100.64.0.1/",
                  "http://[::ffff:100.100.100.200]/", "http://[2002:7f00:1::]/",
                  "http://[2002:a9fe:a9fe::]/", "http://[64:ff9b::a9fe:a9fe]/",
                  "http://[64:ff9b::7f00:1]/", "http://[::7f00:1]/"]


@pytest.mark.parametrize("url", REVIEW_TARGETS)
def test_finding_8_non_global_webhook_targets_are_refused(client, keys, url):  # noqa: F811
    alice, _ = keys
    error = assert_error(client.post("/internal/memory/webhooks", json={"url": url},
                                     headers=alice), 400)
    assert error["details"] == {"field": "url"}
    assert client.get("/internal/memory/webhooks", headers=alice).json() == {"webhooks": []}


def test_a_public_webhook_target_is_registered(client, keys):  # noqa: F811
    alice, _ = keys
    for url in ("http://93.184.215.14/hook", "https://[2606:4700::1111]/hook"):
        response = client.post("/internal/memory/webhooks", json={"url": url}, headers=alice)
        assert response.status_code == 201, response.text
    assert len(client.get("/internal/memory/webhooks", headers=alice).json()["webhooks"]) == 2
