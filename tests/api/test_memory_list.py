"""``GET /api/v1/memories``: the memories a caller may recall, newest first, with their own
metadata, narrowed by the search's filters, page by page with a keyset cursor; corrections
keep (or replace) the metadata. Another user's private memories never appear."""

from __future__ import annotations

from tests.api.conftest import assert_error, bearer, row_counts, store


def listing(client, headers, **params):
    response = client.get("/api/v1/memories", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_listing_pages_newest_first_with_metadata_and_filters(client, make_key):
    ada = bearer(make_key("ada"))
    ids = [store(client, ada, f"Ada's note number {i} about the garden.", visibility="private",
                 metadata={"topic": "garden" if i % 2 else "kitchen", "n": i})["id"]
           for i in range(5)]
    first = listing(client, ada, limit=2)
    assert [m["id"] for m in first["memories"]] == ids[::-1][:2]
    assert first["memories"][0]["metadata"] == {"topic": "kitchen", "n": 4}   # own keys only
    pages, cursor = [first["memories"]], first["nextCursor"]
    while cursor:
        page = listing(client, ada, limit=2, cursor=cursor)
        pages.append(page["memories"])
        cursor = page["nextCursor"]
    assert [m["id"] for p in pages for m in p] == ids[::-1] and len(pages) == 3
    garden = listing(client, ada, filter='{"metadata.topic": {"eq": "garden"}}')
    assert [m["metadata"]["n"] for m in garden["memories"]] == [3, 1]
    assert garden["nextCursor"] is None


def test_another_users_private_memories_are_never_listed(client, make_key):
    ada, bob = bearer(make_key("ada")), bearer(make_key("bob"))
    store(client, ada, "Ada's bank PIN hint is her first cat.", visibility="private",
          metadata={"kind": "hint"})
    assert listing(client, bob, filter='{"metadata.kind": {"eq": "hint"}}')["memories"] == []


def test_a_correction_keeps_the_metadata_unless_it_names_new(client, make_key):
    ada = bearer(make_key("ada"))
    stored = store(client, ada, "Ada's dentist is on Elm Street.", visibility="private",
                   metadata={"kind": "contact"})
    kept = client.post(f"/api/v1/memory/{stored['id']}/correction", headers=ada,
                       json={"content": "Ada's dentist is on Oak Street."}).json()
    assert client.get(f"/api/v1/memory/{kept['id']}", headers=ada).json()["metadata"] == \
        {"kind": "contact"}
    replaced = client.post(f"/api/v1/memory/{kept['id']}/correction", headers=ada,
                           json={"content": "Ada's dentist is on Ash Street.",
                                 "metadata": {"kind": "doctor"}}).json()
    assert client.get(f"/api/v1/memory/{replaced['id']}", headers=ada).json()["metadata"] == \
        {"kind": "doctor"}
    listed = listing(client, ada, filter='{"metadata.kind": {"exists": true}}')["memories"]
    assert [m["content"] for m in listed] == ["Ada's dentist is on Ash Street."]


def test_bad_listings_are_refused_and_change_nothing(client, make_key, database_url):
    ada = bearer(make_key("ada"))
    before = row_counts(database_url)
    for params, field in (({"cursor": "not-a-cursor"}, "cursor"), ({"limit": 0}, None),
                          ({"limit": 201}, None), ({"filter": "{"}, "filter"),
                          ({"query": "x"}, None)):
        error = assert_error(client.get("/api/v1/memories", params=params, headers=ada), 400)
        if field:
            assert field in (error["details"] or {}).get("field", "") + error["message"]
    bad = client.post("/api/v1/memory", headers=ada,
                      json={"content": "x", "metadata": {"correctionOf": "y"}})
    assert_error(bad, 400)
    assert row_counts(database_url) == before
    assert_error(client.get("/api/v1/memories"), 401)


def test_ids_list_a_batch_of_exact_reads_without_what_the_caller_cannot_see(client, make_key):
    ada, bob = bearer(make_key("ada")), bearer(make_key("bob"))
    mine = [store(client, ada, f"Ada's plant {i} needs water weekly.", visibility="private")["id"]
            for i in range(3)]
    theirs = store(client, bob, "Bob's safe code is 2231.", visibility="private")["id"]
    listed = listing(client, ada, ids=",".join([mine[0], mine[2], theirs]))["memories"]
    assert [m["id"] for m in listed] == [mine[2], mine[0]]
    error = assert_error(client.get("/api/v1/memories", params={"ids": "nope"}, headers=ada),
                         400)
    assert error["details"]["field"] == "ids"
