"""MemoryStore (memory_platform/integrations/langgraph.py) against the real API on loopback
and real LangGraph: items round-trip exactly, a memory's content is only the value's text
(the item is in its metadata), an update corrects (the old version stays in the ledger's
history), a delete forgets, searches and namespace listings behave as LangGraph's own stores
do (the behaviours of LangGraph's store tests, restated here) and list everything under a
prefix, batches read before they write, the async twin, audience isolation, and the example
script end to end.

Every test acts as users of its own: private items are the user's alone, so a fresh user's
store starts empty although the module's tests share one API and database.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

from memory_platform.client import AsyncMemoryClient, BadRequest, MemoryClient, NotFound
from memory_platform.integrations.langgraph import MemoryStore
from memory_platform.integrations.langgraph_mapping import Layout
from tests.client.conftest import READ, WRITE, live_settings
from tests.support.live_server import LiveServer

ROOT = Path(__file__).resolve().parents[2]
LAYOUT = Layout("langgraph")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def connect(live_api, keys) -> Iterator:
    """``connect(user, **key)`` -> (MemoryStore, MemoryClient) over a new key of that user."""
    opened: list[MemoryClient] = []

    def make(user: str | None, *, store_options: dict | None = None, **key):
        client = MemoryClient(live_api.url, keys(user, (READ, WRITE), **key), timeout=20)
        opened.append(client)
        return MemoryStore(client, **(store_options or {})), client

    yield make
    for client in opened:
        client.close()


def memories_of(client: MemoryClient, namespace: tuple[str, ...], key: str) -> list:
    """The item's recalled memories, as the platform sees them."""
    return client.list_memories(filter=LAYOUT.item_filter(namespace, key)).memories


VALUE = {"content": "Ada takes the 07:40 train to Lisbon; Müller drives her. ✓",
         "n": 3, "ratio": 0.25, "ok": True, "none": None, "tags": ["travel", "lisbon"],
         "nested": {"deep": {"list": [1, "zwei", {"drei": 3.5}]}, "line": "a\nb\tc"},
         "quotes": 'she said "hi" \\ {"langgraph-store": 1}', "big": 2**60,
         "hidden": "👩‍👩‍👧 soft\u00adhyphen \u200f", "~json:": "~json:\"x\"", "ta\tb": [None]}


def test_a_put_item_is_got_back_exactly(connect):
    store, _ = connect(unique("ada"))
    namespace = ("users", "ada", "travel")
    assert store.put(namespace, "train", VALUE) is None
    item = store.get(namespace, "train")
    assert isinstance(item, Item) and item.value == VALUE
    assert item.namespace == namespace and item.key == "train"
    assert item.created_at == item.updated_at and item.created_at.tzinfo is not None

    long_value = {"text": " ".join(f"word{i}" for i in range(900)), "part": 2}
    store.put(namespace, "long", long_value)              # chunked: read whole
    assert store.get(namespace, "long").value == long_value

    assert store.get(namespace, "missing") is None
    assert store.get(("users", "ada", "other"), "train") is None
    assert store.get(("users", "ada"), "train") is None   # a prefix is not the namespace


def test_the_memory_holds_only_the_text_and_the_item_in_its_metadata(connect):
    store, client = connect(unique("ada"))
    namespace = ("users", "ada", "travel")
    store.put(namespace, "train", VALUE)
    store.put(namespace, "doc", {"title": "Lisbon trip", "body": "7:40"}, index=["title"])
    store.put(namespace, "blob", {"n": 1, "tags": ["a"]})
    store.put(namespace, "hidden", {"content": "not searched"}, index=False)
    [train] = memories_of(client, namespace, "train")
    memory = client.get_memory(train.id)
    assert memory.content == VALUE["content"]             # no record, no lookup words
    item = memory.metadata.pop("langgraph")
    assert memory.metadata == {} and item.pop("value").keys() == {
        *VALUE.keys() - {"~json:", "ta\tb"}, '~json:"~json:"', '~json:"ta\\tb"'}
    assert item == {"store": "langgraph", "namespace": "users.ada.travel", "key": "train",
                    "prefixes": ["users", "users.ada", "users.ada.travel"]}
    # (a metadata string takes no control or invisible character: one that has one is kept
    # escaped; createdAt is written from the second version on)
    assert memory.subject_refs["documentId"].startswith("langgraph:users/ada/travel/train#")
    contents = {key: client.get_memory(memories_of(client, namespace, key)[0].id).content
                for key in ("doc", "blob", "hidden")}
    assert contents == {"doc": "Lisbon trip", "blob": '{"n": 1, "tags": ["a"]}',
                        "hidden": "users/ada/travel/hidden"}
    hits = client.search("Müller drives her", min_score=0).results   # what any reader sees
    assert hits[0].content == VALUE["content"]

    store.put(namespace, "twin", {"content": VALUE["content"], "other": True})
    assert store.get(namespace, "twin").value["other"] is True     # one text, two items
    assert store.get(namespace, "train").value == VALUE
    for where in [{"nested": {"line": "a\nb\tc"}}, {"hidden": VALUE["hidden"]},
                  {"~json:": VALUE["~json:"]}, {"ok": 1, "n": 3.0}]:
        assert [i.key for i in store.search(namespace, filter=where)] == ["train"]
    assert store.search(namespace, filter={"tags": "travel"}) == []    # a list is no element


def test_an_update_corrects_the_memory_and_keeps_the_old_in_history(connect):
    store, client = connect(unique("ada"))
    namespace = ("users", "ada", "prefs")
    store.put(namespace, "drink", {"content": "Ada prefers tea"})
    first = store.get(namespace, "drink")
    [old] = memories_of(client, namespace, "drink")

    store.put(namespace, "drink", {"content": "Ada prefers coffee"})
    now = store.get(namespace, "drink")
    assert now.value == {"content": "Ada prefers coffee"}
    assert now.created_at == first.created_at and now.updated_at > first.updated_at
    [new] = memories_of(client, namespace, "drink")
    assert new.id != old.id
    with pytest.raises(NotFound):                          # superseded: no longer recalled
        client.get_memory(old.id)
    between = first.updated_at + (now.updated_at - first.updated_at) / 2
    then = client.as_of(between.isoformat(), query="Ada prefers tea").results
    assert any("Ada prefers tea" in a.text for a in then)  # the ledger's history has it

    store.put(namespace, "drink", {"content": "Ada prefers coffee"})   # unchanged: no write
    assert [m.id for m in memories_of(client, namespace, "drink")] == [new.id]
    assert store.get(namespace, "drink").updated_at == now.updated_at

    # the same text, another value: no correction can say it; forgotten and stored anew
    store.put(namespace, "drink", {"content": "Ada prefers COFFEE", "cups": 2})
    later = store.get(namespace, "drink")
    assert later.value == {"content": "Ada prefers COFFEE", "cups": 2}
    assert later.created_at == first.created_at and later.updated_at > now.updated_at
    [newest] = memories_of(client, namespace, "drink")
    assert newest.content == "Ada prefers COFFEE" and newest.id != new.id
    with pytest.raises(NotFound):
        client.get_memory(new.id)


def test_a_delete_forgets_the_memory(connect):
    store, client = connect(unique("ada"))
    namespace = ("users", "ada")
    store.put(namespace, "secretary", {"content": "Bea answers Ada's phone"})
    [memory] = memories_of(client, namespace, "secretary")
    store.delete(namespace, "secretary")
    assert store.get(namespace, "secretary") is None
    with pytest.raises(NotFound):
        client.get_memory(memory.id)
    assert store.search(namespace) == [] and store.search(namespace, query="phone") == []
    store.delete(namespace, "secretary")                   # absent: nothing to do
    store.put(namespace, "secretary", {"content": "Cleo answers Ada's phone"})
    again = store.get(namespace, "secretary")
    assert again.value["content"].startswith("Cleo")
    assert again.created_at > datetime.fromisoformat(memory.created_at)   # a new item


def test_search_by_query_filter_and_namespace_prefix(connect):
    store, _ = connect(unique("ada"))
    docs = [(("test", "docs"), "doc1", {"title": "Tax deadline of Mandant Nord",
                                        "author": "Alice", "stars": 5}),
            (("test", "docs"), "doc2", {"title": "Holiday plan for the summer",
                                        "author": "Bob", "stars": 3}),
            (("test", "images"), "img1", {"title": "Photo of the tax office",
                                          "author": "Alice", "stars": 4}),
            (("testing",), "t1", {"title": "Tax deadline elsewhere", "author": "Alice"})]
    for namespace, key, value in docs:
        store.put(namespace, key, value, index=["title"])

    everything = store.search(("test",))
    assert {i.key for i in everything} == {"doc1", "doc2", "img1"}   # "testing" is no child
    assert all(isinstance(i, SearchItem) and i.score is None for i in everything)
    assert [i.key for i in everything] == ["img1", "doc2", "doc1"]   # newest first
    assert {i.key for i in store.search(("test", "docs"))} == {"doc1", "doc2"}
    assert {i.key for i in store.search(())} == {"doc1", "doc2", "img1", "t1"}
    assert store.search(("tes",)) == []

    alice = store.search(("test",), filter={"author": "Alice"})
    assert {i.key for i in alice} == {"doc1", "img1"}
    assert {i.key for i in store.search(("test",), filter={"stars": {"$gte": 4}})} == {
        "doc1", "img1"}
    assert {i.key for i in store.search(("test",), filter={"author": {"$ne": "Alice"}})} == {
        "doc2"}
    assert len(store.search(("test",), limit=2)) == 2
    assert len(store.search(("test",), offset=2)) == 1

    hits = store.search(("test",), query="tax deadline")
    assert hits[0].key == "doc1" and isinstance(hits[0].score, float)
    assert "t1" not in {h.key for h in hits}                          # outside the prefix
    assert [h.key for h in store.search(("test",), query="tax", filter={"stars": 4})] == [
        "img1"]
    assert [h.key for h in store.search(("test", "docs"), query="holiday summer")][:1] == [
        "doc2"]


def test_list_namespaces_like_langgraphs_stores(connect):
    store, _ = connect(unique("ada"))
    namespaces = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
                  ("a", "c", "f"), ("b", "a", "f"), ("users", "123"),
                  ("users", "456", "settings"), ("admin", "users", "789")]
    store.batch([PutOp(ns, f"id_{i}", {"data": f"value_{i:02d}"})
                 for i, ns in enumerate(namespaces)])

    assert store.list_namespaces() == sorted(namespaces)
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"),
                                                     ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"),
                                                                   ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"),
                                                                 ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"),
                                                                  ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"),
                                                         ("b", "a", "f")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert store.list_namespaces(prefix=("user",)) == []                  # whole labels only

    store.delete(("users", "123"), "id_6")
    assert ("users", "123") not in store.list_namespaces(prefix=("users",))


def test_a_batch_reads_before_it_writes_and_the_last_put_wins(connect):
    store, _ = connect(unique("ada"))
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch([
        GetOp(("test", "foo"), "key1"),
        PutOp(("test", "bar"), "key2", {"data": "changed"}),
        SearchOp(("test",), filter={"data": "value1"}),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("test",)),)),
        GetOp(("test",), "key3"),
        PutOp(("test",), "key3", {"data": "first"}),
        PutOp(("test",), "key3", {"data": "last"}),
        GetOp(("test", "bar"), "key2"),
        PutOp(("test", "foo"), "key1", None),
    ])
    assert len(results) == 9
    assert results[0].value == {"data": "value1"} and results[1] is None
    assert [i.key for i in results[2]] == ["key1"]
    assert results[3] == [("test", "bar"), ("test", "foo")]
    assert results[4] is None and results[5] is None and results[6] is None
    assert results[7].value == {"data": "value2"}          # read before the batch's put
    assert store.get(("test", "bar"), "key2").value == {"data": "changed"}
    assert store.get(("test",), "key3").value == {"data": "last"}
    assert store.get(("test", "foo"), "key1") is None


def test_namespace_rules_of_langgraph(connect):
    store, _ = connect(unique("ada"))
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "foo", doc)
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a.b",), "k")])               # past the public methods too
    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert store.get(("foo", "langgraph", "foo"), "bar").value == doc
    assert store.search(("foo", "langgraph", "foo"), query="bar")[0].value == doc
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])  # the root rule is the API's
    assert store.search(("langgraph", "foo"))[0].value == doc
    store.put(("user_1", "a%b", " spaced \n"), "ключ", {"text": "Grüße, 你好"})
    assert store.get(("user_1", "a%b", " spaced \n"), "ключ").value == {"text": "Grüße, 你好"}
    assert store.list_namespaces(prefix=("user_1",)) == [("user_1", "a%b", " spaced \n")]
    deep = tuple(f"l{i}" for i in range(40))               # no depth limit of its own
    store.put(deep, "k", doc)
    assert store.get(deep, "k").value == doc
    assert store.list_namespaces(prefix=deep[:30]) == [deep]
    for namespace, key, value in [(("x" * 200, "y" * 60), "k", doc),    # > 256 joined
                                  (("ok",), "k" * 257, doc),
                                  (("ok",), "k", {"content": "big", "blob": "z" * 16000})]:
        with pytest.raises(ValueError, match="at most"):
            store.put(namespace, key, value)
    assert store.search(("ok",)) == []                     # refused before any write
    with pytest.raises(NotImplementedError):
        store.put(("ttl",), "k", doc, ttl=5)


def test_the_async_twin_over_the_async_client(live_api, keys):
    user = unique("ada")

    async def main() -> None:
        async with AsyncMemoryClient(live_api.url, keys(user, (READ, WRITE))) as client:
            store = MemoryStore(aclient=client)
            namespace = ("users", user, "notes")
            await store.abatch([PutOp(namespace, f"n{i:02d}", {"content": f"note {i}", "i": i})
                                for i in range(60)])   # past one search page
            assert (await store.aget(namespace, "n07")).value == {"content": "note 7", "i": 7}
            listed = await store.asearch(namespace, limit=100)
            assert len(listed) == 60 and len({i.key for i in listed}) == 60
            below = await store.asearch(namespace, filter={"i": {"$lt": 2}})
            assert {i.key for i in below} == {"n00", "n01"}
            await store.aput(namespace, "n07", {"content": "note seven", "i": 7})
            assert (await store.aget(namespace, "n07")).value["content"] == "note seven"
            hits = await store.asearch(namespace, query="seven")
            assert hits[0].key == "n07"
            assert await store.alist_namespaces(prefix=("users",)) == [namespace]
            await store.adelete(namespace, "n07")
            got, searched = await store.abatch([GetOp(namespace, "n07"),
                                                SearchOp(namespace, query="seven")])
            assert got is None and "n07" not in {h.key for h in searched}
            with pytest.raises(RuntimeError):
                store.get(namespace, "n01")               # no sync client given

    asyncio.run(main())


def test_a_connected_store_serves_every_event_loop_and_a_sync_one_abatch(live_api, keys):
    user = unique("ada")
    namespace = ("users", user)
    with MemoryStore.connect(live_api.url, keys(user, (READ, WRITE))) as store:
        asyncio.run(store.aput(namespace, "a", {"content": "one"}))
        assert asyncio.run(store.aget(namespace, "a")).value == {"content": "one"}  # new loop
        assert store.get(namespace, "a").value == {"content": "one"}
        asyncio.run(store.aclose())
    with MemoryClient(live_api.url, keys(user, (READ, WRITE))) as client:
        sync_only = MemoryStore(client)                   # abatch runs batch in a thread
        assert asyncio.run(sync_only.aget(namespace, "a")).value == {"content": "one"}


def test_the_api_premises_the_store_rests_on(connect):
    """What the API does that MemoryStore is built around (its module doc): a listing
    answers the writer's metadata and filters on it (an array field matches its element); a
    correction takes the metadata it is given; a correction that says what the memory
    already says is refused, and a store of it with the same subject refs is deduplicated
    (its metadata dropped), hence forget-and-store for a same-text change and the item's own
    subject ref."""
    _, client = connect(unique("ada"))
    written = client.store("Ada's badge is number 41", visibility="private",
                           subject_refs={"probe": "p1"}, metadata={"probe": {"tags": ["a"]}})
    listed = client.list_memories(filter={"metadata.probe.tags": {"eq": "a"}}).memories
    assert [(m.id, m.metadata) for m in listed] == [(written.id, {"probe": {"tags": ["a"]}})]
    corrected = client.correct(written.id, "Ada's badge is number 42",
                               metadata={"probe": {"tags": ["b"]}})
    assert client.get_memory(corrected.id).metadata == {"probe": {"tags": ["b"]}}
    with pytest.raises(BadRequest):
        client.correct(corrected.id, "ada's badge is  number 42")
    again = client.store("Ada's badge is number 42", visibility="private",
                         subject_refs={"probe": "p1"}, metadata={"probe": "other"})
    assert again.deduplicated and again.id == corrected.id
    assert client.get_memory(again.id).metadata == {"probe": {"tags": ["b"]}}


def test_value_filters_run_on_the_server_as_far_as_they_can():
    where = LAYOUT.prefix_filter(("a", "b"), {
        "kind": "fact", "n": 2, "ok": True, "deep": {"x": "y", "z": {"w": 1}},
        "line": "a\nb", "big": 2**60, "none": None, "gt": {"$gt": 1}, "eq": {"$eq": "e"},
        "bad key": "v", "list": [1]})
    assert where == {"and": [
        {"metadata.langgraph.store": {"eq": "langgraph"}},
        {"metadata.langgraph.prefixes": {"eq": "a.b"}},
        {"metadata.langgraph.value.kind": {"eq": "fact"}},
        {"metadata.langgraph.value.n": {"eq": 2}},
        {"metadata.langgraph.value.ok": {"in": [True, 1]}},
        {"metadata.langgraph.value.deep.x": {"eq": "y"}},           # three deep: here only
        {"metadata.langgraph.value.line": {"eq": '~json:"a\\nb"'}},
        {"metadata.langgraph.value.eq": {"eq": "e"}}]}
    assert LAYOUT.prefix_filter(())["and"][1] == {"metadata.langgraph.prefixes": {
        "exists": True}}                                            # tombstones have none


def test_a_listing_under_a_prefix_is_complete(connect):
    store, client = connect(unique("ada"))
    namespaces = [("big", f"part{i % 3}") for i in range(230)]     # past a listing page
    store.batch([PutOp(ns, f"k{i:03d}", {"content": f"entry {i}", "i": i, "odd": i % 2 == 1})
                 for i, ns in enumerate(namespaces)])
    everything = store.search(("big",), limit=1000)
    assert len(everything) == 230 and len({i.key for i in everything}) == 230
    assert [i.key for i in everything][:2] == ["k229", "k228"]       # newest first
    assert len(store.search(("big", "part1"), limit=1000)) == 77
    assert {i.key for i in store.search(("big",), offset=225, limit=10)} == {
        "k004", "k003", "k002", "k001", "k000"}
    odd = store.search(("big",), filter={"odd": True}, limit=1000)           # on the server
    assert len(odd) == 115 and all(i.value["i"] % 2 for i in odd)
    low = store.search(("big",), filter={"i": {"$lt": 60}, "odd": False}, limit=1000)
    assert {i.key for i in low} == {f"k{i:03d}" for i in range(0, 60, 2)}    # partly here
    assert store.list_namespaces(prefix=("big",)) == [("big", "part0"), ("big", "part1"),
                                                      ("big", "part2")]
    assert len(list(client.iter_memories(page_size=200))) == 230   # one memory an item


@pytest.fixture(scope="module")
def strict_api(module_database_url, tmp_path_factory) -> Iterator[LiveServer]:
    """The API with a similarity scale no question of the hash embedding reaches: every
    search's confidence, so every score, is 0 (as a calibrated model scores an unrelated
    question): the store's reads must not depend on scores."""
    settings = live_settings(module_database_url, tmp_path_factory.mktemp("strict-api"),
                             retrieval_similarity_scale=(0.98, 0.99))
    with LiveServer(settings) as server:
        yield server


def test_reads_do_not_depend_on_scores(strict_api, keys):
    user = unique("ada")
    with MemoryClient(strict_api.url, keys(user, (READ, WRITE))) as client:
        store = MemoryStore(client)
        namespace = ("users", user)
        for i in range(3):
            store.put(namespace, f"k{i}", {"content": f"Ada's note {i}"})
        store.put(namespace, "k1", {"content": "Ada's note one"})
        assert store.get(namespace, "k1").value == {"content": "Ada's note one"}
        assert {i.key for i in store.search(namespace)} == {"k0", "k1", "k2"}
        assert store.list_namespaces() == [namespace]
        assert {h.score for h in store.search(namespace, query="note")} == {0.0}
        store.delete(namespace, "k0")
        assert store.get(namespace, "k0") is None


def test_another_users_key_gets_nothing_of_a_private_item(connect):
    ada_store, _ = connect(unique("ada"))
    bob_store, _ = connect(unique("bob"))
    namespace = ("memories", "shared-name")
    ada_store.put(namespace, "pin", {"content": "Ada's door code is in the blue folder"})
    assert bob_store.get(namespace, "pin") is None
    assert bob_store.search(namespace) == []
    assert bob_store.search(namespace, query="door code blue folder") == []
    assert bob_store.search((), query="door code") == []
    assert bob_store.list_namespaces() == []
    bob_store.put(namespace, "pin", {"content": "Bob's own note"})      # his own item
    assert bob_store.get(namespace, "pin").value == {"content": "Bob's own note"}
    assert ada_store.get(namespace, "pin").value["content"].startswith("Ada's")
    bob_store.delete(namespace, "pin")
    assert ada_store.get(namespace, "pin") is not None


def test_a_team_namespace_is_shared_and_only_its_writer_changes_it(connect):
    ada_store, ada = connect(unique("ada"))
    bob_store, _ = connect(unique("bob"))
    namespace = ("team", unique("handbook"))
    ada_store.put(namespace, "standup", {"content": "Standup is at 9:30 in room 2"})
    [memory] = memories_of(ada, namespace, "standup")
    assert memory.visibility == "team"
    assert bob_store.get(namespace, "standup").value["content"].startswith("Standup")
    assert [h.key for h in bob_store.search(namespace, query="standup room")] == ["standup"]
    with pytest.raises(PermissionError):
        bob_store.put(namespace, "standup", {"content": "Standup moved"})
    with pytest.raises(PermissionError):
        bob_store.delete(namespace, "standup")
    assert ada_store.get(namespace, "standup").value["content"].endswith("room 2")
    ada_store.delete(namespace, "standup")
    assert bob_store.get(namespace, "standup") is None


def test_a_runtime_key_deletes_by_tombstone_and_an_agent_key_is_warned(connect):
    user = unique("ada")
    runtime, _ = connect(None, runtime=True, store_options={"context": {"user_id": user}})
    own, _ = connect(user)
    namespace = ("users", user)
    runtime.put(namespace, "city", {"content": "Ada lives in Porto"})
    assert own.get(namespace, "city").value == {"content": "Ada lives in Porto"}
    runtime.delete(namespace, "city")                     # forget is a person's: tombstone
    assert runtime.get(namespace, "city") is None and own.get(namespace, "city") is None
    assert runtime.search(namespace) == [] and runtime.list_namespaces() == []
    runtime.put(namespace, "city", {"content": "Ada lives in Braga"})
    assert own.get(namespace, "city").value == {"content": "Ada lives in Braga"}
    runtime.put(namespace, "city", {"content": "Ada lives in Braga", "since": 2021})
    assert own.get(namespace, "city").value == {"content": "Ada lives in Braga", "since": 2021}
    assert [i.key for i in own.search(namespace)] == ["city"]

    agent, _ = connect(user, agent=True)
    with pytest.warns(UserWarning, match="waits for review"):
        agent.put(namespace, "guess", {"content": "Ada probably likes trains"})
    assert agent.get(namespace, "guess") is None           # not recalled until approved


def test_stores_of_other_names_keep_apart(connect):
    user = unique("ada")
    one, client = connect(user, store_options={"name": "graph-one"})
    two = MemoryStore(client, name="graph-two", visibility_from_namespace=False)
    one.put(("private", "x"), "k", {"content": "from graph one"})
    assert two.get(("private", "x"), "k") is None and two.list_namespaces() == []
    two.put(("private", "x"), "k", {"content": "from graph two"})
    assert one.get(("private", "x"), "k").value == {"content": "from graph one"}


def test_the_example_remembers_across_threads(live_api, keys):
    user = unique("ada")
    script = ROOT / "examples" / "langgraph_memory.py"
    env = {**os.environ, "MEMORY_API_URL": live_api.url,
           "MEMORY_API_KEY": keys(user, (READ, WRITE))}
    shown = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                           text=True, env=env, timeout=60)
    assert shown.returncode == 0 and "MEMORY_API_KEY" in shown.stdout
    ran = subprocess.run([sys.executable, str(script), "--user", user, "--forget"],
                         capture_output=True, text=True, env=env, timeout=60, cwd=ROOT)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0].startswith("thread 1 (") and "Noted (memories/" in lines[0]
    assert lines[1].startswith("thread 2 (") and "You told me: Ada drinks green tea" in lines[1]
    assert "recalled 1 memory(ies) from thread 1" in lines[2]
    assert "'remember:" not in lines[2]                    # thread 2's state is its own
    assert lines[3].startswith(f"forgot memories/{user}/fact-")
    with MemoryClient(live_api.url, keys(user, (READ, WRITE))) as client:
        assert client.search("green tea", min_score=0).results == []


def test_the_example_refuses_to_run_without_a_key():
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_API_KEY"}
    ran = subprocess.run([sys.executable, str(ROOT / "examples" / "langgraph_memory.py")],
                         capture_output=True, text=True, env=env, timeout=60)
    assert ran.returncode == 2 and "MEMORY_API_KEY is not set" in ran.stderr



