"""Conversation turns (memories/turns.py, migration 0017): a memory written into a session
with an event time links to the turn before it in its session and audience, its first chunk
carries that turn's text and the day as context (indexed; the turn's vector is its own
text's), and deleting the previous turn takes the copy away."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from pgvector.psycopg import register_vector

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.memories.turns import date_words
from memory_platform.features.retrieval.search import search_memories
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.factory import get_provider

DAY = datetime(2023, 5, 8, 18, 0, tzinfo=UTC)
QUESTION = "Ben: What did you end up naming the puppy?"
ANSWER = "Anna: Rex! After my grandpa's old companion."
NEWS = "Anna: Back from Barcelona since Sunday!"


def _turn(db, settings, ctx, content, minute, **kwargs):
    write = MemoryWrite(content, occurred_at=DAY + timedelta(minutes=minute), **kwargs)
    return store_memory(db, settings, ctx, write)


def _memory(db, memory_id):
    return db.execute("SELECT previous_memory_id FROM agent_memories WHERE id = %s",
                      (memory_id,)).fetchone()[0]


def _chunk(db, memory_id):
    register_vector(db)
    return db.execute("SELECT context, embedding, embedding_key FROM agent_memory_chunks"
                      " WHERE memory_id = %s AND chunk_index = 0", (memory_id,)).fetchone()


def test_a_turn_links_to_the_turn_before_it_and_carries_its_text(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="anna", session_key="chat-1")
    first = _turn(db, hash_settings, ctx, QUESTION, 0)
    second = _turn(db, hash_settings, ctx, ANSWER, 1)

    assert _memory(db, first.id) is None and _memory(db, second.id) == first.id
    first_context, *_ = _chunk(db, first.id)
    second_context, vector, _ = _chunk(db, second.id)
    assert first_context == date_words(DAY) == "8 May 2023 · 8. Mai 2023"
    assert second_context == f"{date_words(DAY)}\n{QUESTION}"
    expected = get_provider(hash_settings).embed_documents([ANSWER])[0]
    assert np.allclose(vector.to_numpy(), expected, atol=1e-3)


def test_a_late_turn_finds_the_turn_before_it_by_event_time(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="anna", session_key="chat-1")
    third = _turn(db, hash_settings, ctx, "Anna: He sleeps all day.", 5)
    first = _turn(db, hash_settings, ctx, QUESTION, 0)  # written late, happened first
    assert _memory(db, first.id) is None and _memory(db, third.id) is None
    second = _turn(db, hash_settings, ctx, ANSWER, 1)
    assert _memory(db, second.id) == first.id


@pytest.mark.parametrize("change", [
    {"session_key": None},                          # no session
    {"occurred_at": None},                          # no event time
    {"memory_class": "flush"},                      # derived, not an agent's own turn
])
def test_only_an_agents_own_dated_session_memory_is_a_turn(db, hash_settings, instance, change):
    ctx = AccessContext(instance, user_id="anna", session_key="chat-1")
    _turn(db, hash_settings, ctx, QUESTION, 0)
    if "session_key" in change:
        ctx = AccessContext(instance, user_id="anna")
    write = MemoryWrite(ANSWER, occurred_at=change.get("occurred_at", DAY + timedelta(minutes=1)),
                        memory_class=change.get("memory_class", "explicit"))
    stored = store_memory(db, hash_settings, ctx, write)
    assert _memory(db, stored.id) is None and _chunk(db, stored.id)[0] is None


def test_the_context_never_crosses_an_audience_or_a_session(db, hash_settings, instance):
    private = AccessContext(instance, user_id="anna", session_key="chat-1")
    _turn(db, hash_settings, private, "Anna: My PIN hint is the cat's name.", 0)
    team = _turn(db, hash_settings, private, ANSWER, 1, visibility="team")
    other_session = _turn(db, hash_settings,
                          AccessContext(instance, user_id="anna", session_key="chat-2"),
                          "Anna: Morning!", 2)
    for stored in (team, other_session):
        assert _memory(db, stored.id) is None
        assert "PIN" not in _chunk(db, stored.id)[0]


def test_the_context_holds_the_two_turns_before(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="anna", session_key="chat-1")
    news = _turn(db, hash_settings, ctx, NEWS, 0)
    _turn(db, hash_settings, ctx, QUESTION, 1)
    answer = _turn(db, hash_settings, ctx, ANSWER, 2)
    assert _chunk(db, answer.id)[0] == f"{date_words(DAY)}\n{NEWS}\n{QUESTION}"
    assert _memory(db, answer.id) not in (None, news.id)  # the link: the turn right before


def test_deleting_a_turn_deletes_its_copies_in_the_two_turns_after(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="anna", session_key="chat-1")
    first = _turn(db, hash_settings, ctx, NEWS, 0)
    second = _turn(db, hash_settings, ctx, QUESTION, 1)
    third = _turn(db, hash_settings, ctx, ANSWER, 2)
    fourth = _turn(db, hash_settings, ctx, "Ben: Ha, lovely.", 3)
    vector_before = _chunk(db, second.id)[1]
    indexed = ("SELECT count(*) FROM agent_memory_chunks WHERE instance_key = %s"
               " AND context_tsv @@ to_tsquery('english', 'barcelona')")
    assert db.execute(indexed, (instance,)).fetchone()[0] == 2  # the two turns after it
    db.execute("DELETE FROM agent_memories WHERE id = %s", (first.id,))

    assert db.execute(indexed, (instance,)).fetchone()[0] == 0
    assert _memory(db, second.id) is None and _memory(db, third.id) == second.id
    context, vector, key = _chunk(db, second.id)
    assert context is None and key is not None
    assert np.array_equal(vector.to_numpy(), vector_before.to_numpy())  # its own text's
    assert _chunk(db, third.id)[0] is None
    assert "Barcelona" not in _chunk(db, fourth.id)[0]  # never held it: untouched
    assert not db.execute("SELECT count(*) FROM agent_memory_chunks"
                          " WHERE instance_key = %s AND context LIKE %s",
                          (instance, "%Barcelona%")).fetchone()[0]


def test_a_reply_is_found_by_the_question_it_answers(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="anna", session_key="chat-1")
    _turn(db, hash_settings, ctx, QUESTION, 0)
    answer = _turn(db, hash_settings, ctx, ANSWER, 1)
    _turn(db, hash_settings, ctx, "Ben: Haha, lovely. The weather is awful here.", 2)
    keyword_only = hash_settings.model_copy(update={"retrieval_turn_vector_weight": 0.0,
                                                    "retrieval_turn_keyword_weight": 1.0})
    hits = search_memories(db, keyword_only, AccessContext(instance, user_id="anna"),
                           "puppy name", stamp=False)
    assert answer.id in [h.memory_id for h in hits]
    without_context = keyword_only.model_copy(update={"retrieval_context_keyword_weight": 0.0})
    hits = search_memories(db, without_context, AccessContext(instance, user_id="anna"),
                           "puppy name", stamp=False)
    found = {h.memory_id: h.keyword_score for h in hits}
    assert found.get(answer.id, 0.0) == 0.0


def test_deleting_a_late_turn_deletes_its_copy_in_a_turn_it_is_not_linked_to(
        db, hash_settings, instance):
    """A turn written late (it happened before turns already stored) is copied into the
    context of a turn written after it, which links to another turn before it: deleting the
    late turn still takes every copy of its words away."""
    ctx = AccessContext(instance, user_id="anna", session_key="chat-1")
    _turn(db, hash_settings, ctx, QUESTION, 0)
    after = _turn(db, hash_settings, ctx, "Ben: Ha, lovely.", 10)
    late = _turn(db, hash_settings, ctx, NEWS, 5)  # written now, happened between the two
    last = _turn(db, hash_settings, ctx, ANSWER, 20)
    assert _memory(db, last.id) == after.id  # linked to the turn right before it ...
    assert "Barcelona" in _chunk(db, last.id)[0]  # ... and holding the late one's words
    db.execute("DELETE FROM agent_memories WHERE id = %s", (late.id,))

    assert not db.execute("SELECT count(*) FROM agent_memory_chunks"
                          " WHERE instance_key = %s AND (context LIKE %s"
                          " OR context_tsv @@ to_tsquery('english', 'barcelona'))",
                          (instance, "%Barcelona%")).fetchone()[0]
    assert _chunk(db, last.id)[0] is None
    named = ("SELECT count(*) FROM agent_memory_chunks WHERE instance_key = %s"
             " AND context_memory_ids IS NOT NULL")
    assert db.execute(named, (instance,)).fetchone()[0] == 0  # only the late one was named


def test_only_a_context_the_links_do_not_lead_to_names_its_turns(db, hash_settings, instance):
    """In order, the links lead from each copied turn to the turn (the link trigger clears
    the copies): no ids are written, no index entry paid for."""
    ctx = AccessContext(instance, user_id="anna", session_key="chat-1")
    _turn(db, hash_settings, ctx, QUESTION, 0)
    after = _turn(db, hash_settings, ctx, "Ben: Ha, lovely.", 10)
    in_order = _turn(db, hash_settings, ctx, ANSWER, 20)
    late = _turn(db, hash_settings, ctx, NEWS, 5)
    last = _turn(db, hash_settings, ctx, "Anna: See you soon.", 30)
    rows = dict(db.execute("SELECT memory_id, context_memory_ids FROM agent_memory_chunks"
                           " WHERE instance_key = %s AND chunk_index = 0",
                           (instance,)).fetchall())
    assert rows[in_order.id] is None and rows[late.id] is None and rows[after.id] is None
    assert rows[last.id] is None  # copies "after" and "in order": linked
    later = _turn(db, hash_settings, ctx, "Ben: Bye!", 11)  # copies "late" and "after"
    assert db.execute("SELECT context_memory_ids FROM agent_memory_chunks"
                      " WHERE memory_id = %s", (later.id,)).fetchone()[0] == [late.id, after.id]
