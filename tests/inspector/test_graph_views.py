"""The graph views of the inspector (memory_platform.features.graph.views through /inspector/api):
the visibility rule narrowed to a view, never widened; the display budget keeps several
components; search; the Dream filter; the node card."""

from __future__ import annotations

import psycopg

from tests.api.conftest import ADMIN, READ, assert_error
from tests.db import rows
from tests.inspector.support import INSTANCE, seed_graph, sign_in


def _graph(client, **params):
    response = client.get("/inspector/api/graph", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def _labels(body):
    return {n["label"] for n in body["nodes"]}


def test_each_view_shows_its_audience_and_never_another_users_private_rows(
        client, make_key, database_url):
    g = seed_graph(database_url)
    sign_in(client, make_key("alice", (READ,)))
    personal = _graph(client, view="personal")
    assert "Alice's tea" in _labels(personal)
    assert _labels(personal).isdisjoint({"Bob's secret diary", "Ada Lovelace",
                                         "Release train"})
    team = _graph(client, view="team")
    assert {"Ada Lovelace", "Grace Hopper", "Linus"} <= _labels(team)
    assert "Alice's tea" not in _labels(team)
    channel = _graph(client, view="channel", channel="chan-1")
    assert _labels(channel) == {"Release train"}
    for view in ("personal", "team", "channel"):
        for node in (f"entity:{g.bob_private}", f"claim:{g.bob_claim}"):
            assert_error(client.get("/inspector/api/node",
                                    params={"view": view, "node": node,
                                            "channel": "chan-1"}), 404)
    assert "Bob" not in str(_graph(client, view="team", q="diary"))

    # bob is no member of chan-1: the channel view is empty for him.
    client.cookies.clear()
    sign_in(client, make_key("bob", (READ,)))
    assert _graph(client, view="channel", channel="chan-1")["nodes"] == []
    assert "Bob's secret diary" in _labels(_graph(client, view="personal"))


def test_the_node_shape_and_the_combined_admin_view(client, make_key, database_url):
    g = seed_graph(database_url)
    sign_in(client, make_key("anna", (READ, ADMIN)))
    body = _graph(client, view="all")
    assert body["allScopes"] is True
    assert {"Release train", "Ada Lovelace"} <= _labels(body)
    # Never another user's private rows (issue 28, finding 11: tests/inspector/
    # test_all_scopes_private.py).
    assert _labels(body).isdisjoint({"Alice's tea", "Bob's secret diary"})
    for node in body["nodes"]:
        assert set(node) == {"id", "label", "kind", "type", "audience"}
        assert node["kind"] in ("entity", "fact")
    for edge in body["edges"]:
        assert set(edge) == {"id", "source", "target", "relation", "kind"}
    ids = {n["id"] for n in body["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in body["edges"])
    assert {"id": f"edge:{g.edge}", "source": f"entity:{g.ada}",
            "target": f"entity:{g.grace}", "relation": "works_with",
            "kind": "relation"} in body["edges"]
    assert {"id": f"fact:{g.ada_claim}", "source": f"entity:{g.ada}",
            "target": f"claim:{g.ada_claim}", "relation": "writes",
            "kind": "fact"} in body["edges"]


def test_the_budget_keeps_several_components_search_and_dream_filter(client, make_key,
                                                                      database_url):
    g = seed_graph(database_url)
    sign_in(client, make_key("alice", (READ,)))
    small = _graph(client, view="team", budget=3)
    assert len(small["nodes"]) <= 3
    entities = {n["label"] for n in small["nodes"] if n["kind"] == "entity"}
    assert "Linus" in entities and ({"Ada Lovelace", "Grace Hopper"} & entities)
    assert small["components"]["shown"] == 2 and small["truncated"] is True

    found = _graph(client, view="team", q="analytical")
    assert _labels(found) == {"Ada Lovelace", "Ada writes the analytical engine notes."}
    assert _labels(_graph(client, view="team", q="countess")) >= {"Ada Lovelace"}
    assert _graph(client, view="team", q="100%_")["nodes"] == []

    dreamed = _graph(client, view="team", dream=str(g.dream))
    assert _labels(dreamed) == {"Ada Lovelace", "Grace Hopper",
                                "Ada writes the analytical engine notes."}
    assert "Linus" not in _labels(dreamed)
    assert_error(client.get("/inspector/api/graph", params={"view": "team", "dream": "x"}), 400)
    assert_error(client.get("/inspector/api/graph", params={"view": "nope"}), 400)
    assert_error(client.get("/inspector/api/graph", params={"view": "team", "budget": 0}), 400)


def test_the_node_card(client, make_key, database_url):
    g = seed_graph(database_url)
    sign_in(client, make_key("alice", (READ,)))
    card = client.get("/inspector/api/node", params={"view": "team",
                                                     "node": f"entity:{g.ada}"}).json()
    assert card["title"] == "Ada Lovelace" and card["kind"] == "entity"
    assert "approved assertions" in card["explainer"]
    meta = card["metadata"]
    assert meta["type"] == "person" and meta["aliases"] == ["Countess of Lovelace"]
    assert meta["visibility"] == "team" and meta["audienceKey"] is None
    assert [a["text"] for a in card["assertions"]] == ["Ada writes the analytical engine notes."]
    assert [(r["relation"], r["target"]) for r in card["relationships"]] == [
        ("works_with", "Grace Hopper")]
    assert [e["dreamId"] for e in card["evidence"]] == [str(g.dream)]
    assert card["evidence"][0]["dreamLink"] == f"/inspector/dreams#dream-{g.dream}"
    fact = client.get("/inspector/api/node", params={"view": "team",
                                                     "node": f"claim:{g.ada_claim}"}).json()
    assert fact["kind"] == "fact" and fact["metadata"]["sourceRefs"] == [
        {"dreamId": str(g.dream)}]
    assert_error(client.get("/inspector/api/node", params={"view": "team", "node": "bogus"}),
                 400)


def test_the_node_card_lists_each_evidence_item_once_and_counts_what_it_lists(
        client, make_key, database_url):
    g = seed_graph(database_url)
    with psycopg.connect(database_url, autocommit=True) as conn:
        # The Dream's evidence on Ada herself, beside the same Dream's on her claim.
        rows.knowledge_evidence(conn, INSTANCE, evidence_kind="dream", dream_id=g.dream,
                                entity_id=g.ada)
    sign_in(client, make_key("alice", (READ,)))
    card = client.get("/inspector/api/node", params={"view": "team",
                                                     "node": f"entity:{g.ada}"}).json()
    assert [e["dreamId"] for e in card["evidence"]] == [str(g.dream)]
    assert card["metadata"]["evidenceCounts"] == {"dream": 1}
    (claim,) = card["assertions"]
    assert claim["evidence"] == 1
