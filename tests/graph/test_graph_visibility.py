"""Property: no graph read returns a row the visibility rule forbids, and every read opens
exactly what it allows (knowledge_search, get_entity, neighbors, explain_claim and the graph
items of context_search).

The rule, written out again from the specification ("Knowledge graph", visibility) without
calling access.py:

* workspace rows: every caller of the instance;
* team rows: a team-access context (a user, a group room, a channel thread or a channel
  type); the empty context none;
* private rows: only the user whose id is their audience key (subject_refs.userId);
* channel rows: callers in that thread or room, and users who are members of the channel;
* nothing crosses an instance.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from memory_platform.features.context import context_search
from memory_platform.features.graph.reads import explain_claim, get_entity, neighbors
from memory_platform.features.graph.search import knowledge_search
from memory_platform.foundation.errors import NotFound
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider
from tests.db import rows
from tests.graph import knowledge_rows as kr
from tests.support.settings import hash_embedding_settings

USERS = ("ada", "bob", "cy")
THREADS = ("slack:T1", "slack:T2")
ROOMS = ("room-1",)
MEMBERS = {("slack:T1", "ada"), ("room-1", "bob"), ("slack:T2", "cy")}
AUDIENCES = (("workspace", None), ("team", None), ("private", "ada"), ("private", "bob"),
             ("channel", "slack:T1"), ("channel", "slack:T2"), ("channel", "room-1"))
QUERY = "harbor crane inspection"


@dataclass(frozen=True)
class Rows:
    instance: str
    audience: dict[uuid.UUID, tuple[str, str | None]]  # every graph row id -> its audience
    entities: dict[tuple[str, str | None], uuid.UUID]
    claims: dict[tuple[str, str | None], uuid.UUID]


def visible(audience: tuple[str, str | None], ctx: AccessContext) -> bool:
    kind, key = audience
    if kind == "workspace":
        return True
    if kind == "team":
        return bool(ctx.user_id or ctx.group_room_id or ctx.channel_thread_key
                    or ctx.channel_type)
    if kind == "private":
        return ctx.user_id == key
    return key in (ctx.channel_thread_key, ctx.group_room_id) or (key, ctx.user_id) in MEMBERS


@pytest.fixture(scope="module")
def settings(module_database_url, tmp_path_factory):
    # Edges of every matched entity are expanded (the default expands the top five).
    return hash_embedding_settings(module_database_url, data_dir=tmp_path_factory.mktemp("s"),
                                   graph_expand_entities=20)


@pytest.fixture(scope="module")
def graph(db, settings) -> Rows:
    instance = f"vis-{uuid.uuid4().hex[:8]}"
    provider = HashEmbeddingProvider(settings.hash_embedding_dimensions)
    audience, entities, claims = {}, {}, {}
    for channel, user in MEMBERS:
        rows.channel_member(db, instance, channel_key=channel, user_id=user)
    for target, (kind, key) in [(instance, a) for a in AUDIENCES] + [
            (f"{instance}-other", ("workspace", None))]:
        name = f"{kind} {key or ''}".strip()
        harbor = kr.entity(db, target, f"Harbor crane {name}", kind=kind, key=key)
        other = kr.entity(db, target, f"Dock {name}", kind=kind, key=key)
        claim = kr.claim(db, target, harbor, f"Harbor crane inspection for {name}.",
                         kind=kind, key=key)
        edge = kr.edge(db, target, harbor, other, kind=kind, key=key)
        kr.embed(db, target, provider, "claim", claim, f"Harbor crane inspection {name}")
        kr.embed(db, target, provider, "entity", harbor, f"Harbor crane {name}")
        owner = ("other", None) if target != instance else (kind, key)
        audience.update(dict.fromkeys((harbor, other, claim, edge), owner))
        if target == instance:
            entities[(kind, key)], claims[(kind, key)] = harbor, claim
    return Rows(instance, audience, entities, claims)


contexts = st.builds(
    lambda user, thread, room, channel_type: (user, thread, room, channel_type),
    st.sampled_from((None, *USERS)), st.sampled_from((None, *THREADS)),
    st.sampled_from((None, *ROOMS)), st.sampled_from((None, "slack")))


@hypothesis_settings(max_examples=30, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(who=contexts)
def test_every_graph_read_opens_exactly_what_the_rule_allows(db, settings, graph, who):
    user, thread, room, channel_type = who
    ctx = AccessContext(graph.instance, user_id=user, channel_thread_key=thread,
                        group_room_id=room, channel_type=channel_type)
    allowed = {a for a in AUDIENCES if visible(a, ctx)}

    result = knowledge_search(db, settings, ctx, QUERY, limit=50)
    for item in [*result.entities, *result.claims, *result.edges]:
        assert graph.audience[item.id] in allowed, (item, ctx)
    assert {graph.audience[c.id] for c in result.claims} == allowed
    assert {graph.audience[e.id] for e in result.edges} == allowed

    for aud in AUDIENCES:
        entity, claim = graph.entities[aud], graph.claims[aud]
        for read, ident in ((get_entity, entity), (neighbors, entity), (explain_claim, claim)):
            if aud in allowed:
                assert read(db, ctx, ident)
            else:
                with pytest.raises(NotFound):
                    read(db, ctx, ident)
        if aud in allowed:
            got = get_entity(db, ctx, entity)
            assert all(graph.audience[uuid.UUID(c["id"])] == aud
                       for c in got["claims"]["asSubject"])

    items = context_search(db, settings, ctx, QUERY, limit=50)
    graph_items = [i for i in items if i.kind in ("claim", "entity")]
    for item in graph_items:
        assert graph.audience[uuid.UUID(item.id.split(":", 1)[1])] in allowed, (item, ctx)
    assert bool(graph_items)  # workspace rows are always visible
