"""A small knowledge graph for the inspector's tests, written with SQL (tests/db/rows.py):

* team: two disconnected components (Ada -works_with-> Grace; Linus alone) with claims, and
  evidence of one Dream on Ada's claim and on the edge;
* private: alice's own entity ("Alice's tea") and bob's ("Bob's secret diary");
* channel ``chan-1`` (alice a member): one entity ("Release train").
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

import psycopg
from psycopg.types.json import Jsonb

from memory_platform.shared.membership import add_channel_member
from tests.db import rows
from tests.graph import knowledge_rows as kr

INSTANCE = "default"
CSRF = re.compile(r'<meta name="csrf-token" content="([0-9a-f]*)">')


@dataclass(frozen=True)
class Graph:
    ada: uuid.UUID
    grace: uuid.UUID
    linus: uuid.UUID
    ada_claim: uuid.UUID
    linus_claim: uuid.UUID
    edge: uuid.UUID
    alice_private: uuid.UUID
    bob_private: uuid.UUID
    bob_claim: uuid.UUID
    channel_entity: uuid.UUID
    dream: uuid.UUID


def seed_graph(database_url: str) -> Graph:
    with psycopg.connect(database_url, autocommit=True) as conn:
        ada = kr.entity(conn, INSTANCE, "Ada Lovelace", kind="team", entity_type="person",
                        aliases=["Countess of Lovelace"])
        grace = kr.entity(conn, INSTANCE, "Grace Hopper", kind="team", entity_type="person")
        linus = kr.entity(conn, INSTANCE, "Linus", kind="team", entity_type="person")
        ada_claim = kr.claim(conn, INSTANCE, ada, "Ada writes the analytical engine notes.",
                             kind="team", predicate="writes", value="engine notes")
        linus_claim = kr.claim(conn, INSTANCE, linus, "Linus maintains the kernel.",
                               kind="team", predicate="maintains", value="kernel")
        edge = kr.edge(conn, INSTANCE, ada, grace, kind="team", relation="works_with")
        alice_private = kr.entity(conn, INSTANCE, "Alice's tea", kind="private", key="alice")
        kr.claim(conn, INSTANCE, alice_private, "Alice prefers green tea.", kind="private",
                 key="alice", predicate="prefers", value="green tea")
        bob_private = kr.entity(conn, INSTANCE, "Bob's secret diary", kind="private",
                                key="bob")
        bob_claim = kr.claim(conn, INSTANCE, bob_private, "Bob hides the diary in a drawer.",
                             kind="private", key="bob", predicate="hides", value="drawer")
        channel_entity = kr.entity(conn, INSTANCE, "Release train", kind="channel",
                                   key="chan-1")
        add_channel_member(conn, INSTANCE, "chan-1", "alice", added_by="test")
        dream = rows.dream(conn, INSTANCE, audience_kind="team", audience_key=INSTANCE,
                           status="completed")
        for column, ident in (("claim_id", ada_claim), ("edge_id", edge)):
            rows.knowledge_evidence(conn, INSTANCE, evidence_kind="dream", dream_id=dream,
                                    **{column: ident})
        conn.execute("UPDATE agent_knowledge_claims SET source_refs = %s WHERE id = %s",
                     (Jsonb([{"dreamId": str(dream)}]), ada_claim))
    return Graph(ada, grace, linus, ada_claim, linus_claim, edge, alice_private, bob_private,
                 bob_claim, channel_entity, dream)


def sign_in(client, token: str) -> str:
    """Sign ``client`` in with ``token``; the page's CSRF token."""
    response = client.post("/inspector/login", data={"api_key": token},
                           follow_redirects=False)
    assert response.status_code == 303, response.text
    return csrf_of(client)


def csrf_of(client) -> str:
    page = client.get("/inspector/settings")
    if page.status_code != 200:
        page = client.get("/inspector/graph")
    found = CSRF.search(page.text)
    assert found and found.group(1), page.text[:500]
    return found.group(1)
