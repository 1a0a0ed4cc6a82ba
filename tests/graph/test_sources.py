"""Graph sources: only told assertions with an active recall row (real writes through
store_memory), and batches that never mix audiences and respect both caps."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from memory_platform.features.graph.render import render_block
from memory_platform.features.graph.sources import load_sources, plan_batches
from memory_platform.features.graph.types import GraphSource
from memory_platform.foundation.settings import Settings
from memory_platform.shared.ledger.assertions import record_decision
from tests.db import rows
from tests.graph.support import fact


def test_only_told_assertions_with_an_active_recall_row(db, settings, instance):
    told = fact(db, settings, instance, "Ada prefers concise answers with code examples.")
    team = fact(db, settings, instance, "The VAT filing for Mandant Nord is due monthly.",
                visibility="team", refs={"mandantId": "nord"})
    revoked = fact(db, settings, instance, "Ada works on the Apollo project.")
    rejected = fact(db, settings, instance, "Ada uses vim for every edit.")
    expired = fact(db, settings, instance, "Ada is on call this week.")
    archived = fact(db, settings, instance, "Ada reviews every migration.")
    other = fact(db, settings, f"{instance}-x", "Bert prefers long answers.", user="bert")
    record_decision(db, instance_key=instance, assertion_id=revoked.assertion_id,
                    decision="revoke", reviewer_kind="human", reason_code="test")
    record_decision(db, instance_key=instance, assertion_id=rejected.assertion_id,
                    decision="reject", reviewer_kind="policy", reason_code="test")
    db.execute("UPDATE agent_memory_assertions SET valid_from = now() - interval '2 days',"
                 " valid_to = now() - interval '1 day' WHERE id = %s", (expired.assertion_id,))
    db.execute("UPDATE agent_memories SET memory_state = 'archived', archived_at = now()"
                 " WHERE id = %s", (archived.memory_id,))
    wanted = [s.assertion_id for s in (told, team, revoked, rejected, expired, archived, other)]
    loaded = load_sources(db, instance, [*wanted, uuid.uuid4()])
    assert loaded == [told, team]       # private 'ada' sorts before team; every field equal
    assert load_sources(db, instance, []) == []


def test_the_projection_row_is_cited_and_dreams_are_collected(db, settings, instance):
    source = fact(db, settings, instance, "Ada prefers tea over coffee.")
    assert load_sources(db, instance, [source.assertion_id])[0].memory_id == source.memory_id
    projection = uuid.uuid4()
    db.execute(
        "INSERT INTO agent_memories (id, instance_key, memory_scope, visibility_scope,"
        " audience_key, user_id, source_type, content, content_hash, assertion_id)"
        " VALUES (%s, %s, 'user', 'private', 'ada', 'ada', 'dream', %s, 'h', %s)",
        (projection, instance, source.text, source.assertion_id))
    own = rows.dream(db, instance, audience_kind="private", audience_key="ada",
                     status="completed")
    db.execute("UPDATE agent_memory_assertions SET dream_id = %s WHERE id = %s",
                 (own, source.assertion_id))
    later = uuid.uuid4()
    [loaded] = load_sources(db, instance, [source.assertion_id],
                            {source.assertion_id: [later, own]})
    assert loaded.memory_id == projection
    assert loaded.dream_ids == tuple(sorted((own, later), key=str))


# --- plan_batches --------------------------------------------------------------------------

AUDIENCES = [("i1", "private", "ada"), ("i1", "private", "bert"), ("i1", "team", "i1"),
             ("i1", "channel", "slack:c1"), ("i1", "workspace", "i1"), ("i2", "team", "i2"),
             ("i2", "private", "ada")]


@st.composite
def sources(draw) -> list[GraphSource]:
    count = draw(st.integers(0, 40))
    out = []
    for i in range(count):
        instance, kind, key = draw(st.sampled_from(AUDIENCES))
        text = draw(st.sampled_from(["Short fact.", "Ada prefers tea. " * 20,
                                     "Mandant Nord files VAT. " * 60, "x" * 2500]))
        refs = draw(st.dictionaries(st.sampled_from(["mandantId", "userId", "taskId"]),
                                    st.text(min_size=1, max_size=120), max_size=3))
        out.append(GraphSource(instance, uuid.UUID(int=i), uuid.UUID(int=10_000 + i), text,
                               "fact", 0.8, kind, key, None, refs))
    return out


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sources(), st.integers(1, 6), st.integers(1_000, 6_000))
def test_batches_never_mix_audiences_and_respect_both_caps(items, max_sources, max_chars):
    config = Settings(_env_file=None, graph_batch_max_sources=max_sources,
                      graph_batch_max_chars=max_chars)  # type: ignore[call-arg]
    batches = plan_batches(items, config)
    assert batches == plan_batches(items, config)                     # deterministic
    assert sorted((s.memory_id for b in batches for s in b.sources), key=str) == sorted(
        (s.memory_id for s in items), key=str)                        # each source once
    for batch in batches:
        assert batch.sources
        assert {(s.instance_key, s.audience_kind, s.audience_key) for s in batch.sources} == {
            (batch.instance_key, batch.audience_kind, batch.audience_key)}
        assert len(batch.sources) <= max_sources
        if len(batch.sources) > 1:          # one source larger than the cap stands alone
            assert len(render_block(batch, config)) <= max_chars
        group = [s for s in items if (s.instance_key, s.audience_kind, s.audience_key)
                 == (batch.instance_key, batch.audience_kind, batch.audience_key)]
        order = [group.index(s) for s in batch.sources]
        assert order == sorted(order)                                 # the group's order


def test_a_group_is_split_only_when_a_cap_would_be_passed():
    config = Settings(_env_file=None, graph_batch_max_sources=3,
                      graph_batch_max_chars=1_000)  # type: ignore[call-arg]
    small = [GraphSource("i1", uuid.uuid4(), uuid.uuid4(), f"Fact number {i}.", "fact", 0.8,
                         "team", "i1", None, {}) for i in range(7)]
    assert [len(b.sources) for b in plan_batches(small, config)] == [3, 3, 1]
    big = [GraphSource("i1", uuid.uuid4(), uuid.uuid4(), "y" * 400, "fact", 0.8, "team", "i1",
                       None, {}) for _ in range(3)]
    assert [len(b.sources) for b in plan_batches(big, config)] == [1, 1, 1]
    huge = GraphSource("i1", uuid.uuid4(), uuid.uuid4(), "z" * 5_000, "fact", 0.8, "team",
                       "i1", None, {})
    [alone] = plan_batches([huge], config)
    assert alone.sources == (huge,)          # never cut: the text is the evidence
