"""Graph vectors with a real provider (the hash embedding): content-hash skipping, a changed
entity re-embeds, batches follow graph_embed_batch, an outage defers without raising, and
the backlog names the items without a vector of a generation."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from psycopg import sql

from memory_platform.features.graph.embed import (
    embed_graph_items,
    embedding_backlog,
    entity_text,
    text_hash,
)
from memory_platform.shared.embeddings.base import key_of
from memory_platform.shared.embeddings.factory import get_provider
from memory_platform.shared.embeddings.generations import active_generation
from tests.graph.support import apply, batch, claim, entity, extraction, fact, one
from tests.memories.support import OutageEmbedder

TEXT = "Projekt Apollo ships the Keycloak login for Mandant Nord in March."


class CountingEmbedder:
    """The settings' real provider, counting the texts of each call."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.calls: list[int] = []
        for name in ("provider", "model", "dimensions", "preprocessing", "strategy",
                     "similarity_floor"):
            setattr(self, name, getattr(inner, name))

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def graph(db, settings, instance):
    a = fact(db, settings, instance, TEXT)
    changes = apply(db, batch(a), extraction(
        [entity("p", "Projekt Apollo", a, entity_type="project"),
         entity("k", "Keycloak", a, entity_type="tool"),
         entity("m", "Mandant Nord", a, entity_type="mandant")],
        [claim("p", "ships", a, obj="k"), claim("m", "gets", a, value="Keycloak login",
                                                text=TEXT)]))
    return a, changes


def vectors(db, table: str, instance: str) -> dict:
    column = "entity_id" if "entity" in table else "claim_id"
    return {row[0]: (row[1], row[2]) for row in db.execute(sql.SQL(
        "SELECT {}, embedding_key, content_hash FROM {} WHERE instance_key = %s").format(
        sql.Identifier(column), sql.Identifier(table)), (instance,))}


def test_items_are_embedded_once_and_a_changed_entity_again(db, settings, instance):
    a, changes = graph(db, settings, instance)
    entities, claims = changes.changed_entity_ids, changes.changed_claim_ids
    assert (len(entities), len(claims)) == (3, 2)
    provider = get_provider(settings)

    first = embed_graph_items(db, settings, instance, entities, claims)

    assert first == {"embedded": 5, "skipped": 0, "deferred": 0}
    key = key_of(provider)
    assert active_generation(db, instance).generation_key == key
    stored = vectors(db, "agent_knowledge_entity_embeddings", instance)
    assert set(stored) == set(entities) and {k for k, _ in stored.values()} == {key}
    label = one(db, "SELECT content_hash FROM agent_knowledge_entities WHERE id = %s",
                entities[0])
    assert stored[entities[0]][1] == label        # the entity's hash is its embedded text's
    assert len(vectors(db, "agent_knowledge_claim_embeddings", instance)) == 2

    again = embed_graph_items(db, settings, instance, entities, claims)
    assert again == {"embedded": 0, "skipped": 5, "deferred": 0}

    # Apollo gains an alias: its embedded text changed, so only it is embedded again.
    changed = apply(db, batch(a), extraction(
        [entity("p", "Projekt Apollo", a, entity_type="project", aliases=("Apollo",))]))
    (apollo,) = changed.changed_entity_ids
    assert apollo == entities[0]
    third = embed_graph_items(db, settings, instance, entities, claims)
    assert third == {"embedded": 1, "skipped": 4, "deferred": 0}
    after = vectors(db, "agent_knowledge_entity_embeddings", instance)
    assert len(after) == 3
    assert after[apollo][1] == text_hash(entity_text("Projekt Apollo", "project", ["Apollo"]))
    assert after[apollo][1] != stored[apollo][1]


def test_batches_follow_the_setting(db, settings, instance):
    _, changes = graph(db, settings, instance)
    counting = CountingEmbedder(get_provider(settings))
    small = settings.model_copy(update={"graph_embed_batch": 3})

    result = embed_graph_items(db, small, instance, changes.changed_entity_ids,
                               changes.changed_claim_ids, embedder=counting)

    assert result["embedded"] == 5 and counting.calls == [3, 2]


def test_an_outage_defers_without_raising(db, settings, instance):
    _, changes = graph(db, settings, instance)

    result = embed_graph_items(db, settings, instance, changes.changed_entity_ids,
                               changes.changed_claim_ids, embedder=OutageEmbedder())

    assert result == {"embedded": 0, "skipped": 0, "deferred": 5}
    assert vectors(db, "agent_knowledge_entity_embeddings", instance) == {}
    # The failing provider's generation was never registered, let alone activated: the
    # active one is still the fact write's.
    key = key_of(OutageEmbedder())
    assert active_generation(db, instance).generation_key == key_of(get_provider(settings))
    assert one(db, "SELECT count(*) FROM agent_memory_embedding_generations"
                   " WHERE instance_key = %s AND generation_key = %s", instance, key) == 0
    backlog = embedding_backlog(db, instance, key, 100)
    assert (sorted(backlog[0]), sorted(backlog[1])) == (sorted(changes.changed_entity_ids),
                                                        sorted(changes.changed_claim_ids))


def test_the_backlog_names_active_items_without_a_vector(db, settings, instance):
    _, changes = graph(db, settings, instance)
    key = key_of(get_provider(settings))
    assert embedding_backlog(db, instance, key, 2) == (sorted(changes.changed_entity_ids)[:2],
                                                       [])
    embed_graph_items(db, settings, instance, changes.changed_entity_ids[:1], [])
    entities, claims = embedding_backlog(db, instance, key, 100)
    assert sorted(entities) == sorted(changes.changed_entity_ids[1:])
    assert sorted(claims) == sorted(changes.changed_claim_ids)
    db.execute("UPDATE agent_knowledge_entities SET status = 'quarantined' WHERE id = ANY(%s)",
               (changes.changed_entity_ids,))
    assert embedding_backlog(db, instance, key, 100) == ([], sorted(changes.changed_claim_ids))


def test_it_refuses_to_run_inside_a_transaction(db, settings, instance):
    with pytest.raises(RuntimeError, match="commits its own units"), db.transaction():
        embed_graph_items(db, settings, instance, [], [])
