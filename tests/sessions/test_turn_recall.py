"""Session items recalled as conversation turns (sessions/turn_recall.py, migration 0041),
against the real database: each user and assistant item becomes a turn memory of its author,
with the item's id, linked and dated like a turn stored as a memory, so a conversation ranks
the same whichever way it came in; the memory never widens who reads the text and goes with
its item, however the item goes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import pytest

from memory_platform.features.context import context_search
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.memories.turns import date_words
from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.sessions.items import TurnItem, append_items
from memory_platform.features.sessions.turn_recall import recall_turns
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.membership import add_session_participant
from tests.memories.support import OutageEmbedder
from tests.support.settings import hash_embedding_settings

DAY = datetime(2023, 5, 8, 18, 0, tzinfo=UTC)
SESSION = "agent:main:chat-1"
# A small conversation whose answers live in the turn before them: "Rex!" says nothing of a
# puppy, the question before it does.
CONVERSATION = [
    ("user", "Ben: Back from Barcelona since Sunday, the sea was wonderful."),
    ("assistant", "Anna: Lovely! What did you end up naming the puppy?"),
    ("user", "Ben: Rex! After my grandpa's old companion."),
    ("assistant", "Anna: And who went with you to the coast?"),
    ("user", "Ben: Caleb came along, we rented bikes every morning."),
    ("assistant", "Anna: How is the new job at the bakery going?"),
    ("user", "Ben: Early shifts, but I love kneading dough at dawn."),
]
QUESTIONS = ["What is the name of the puppy?", "Who travelled with Ben to the coast?",
             "Where does Ben work now?", "When did Ben come back from Barcelona?"]


@pytest.fixture(scope="module")
def settings(module_database_url: str) -> Settings:
    return hash_embedding_settings(module_database_url)


def ctx_of(instance: str, user: str | None = "ben", session: str | None = SESSION
           ) -> AccessContext:
    return AccessContext(instance_key=instance, user_id=user, session_key=session)


def items(conversation: list[tuple[str, str]] = CONVERSATION, **fields: Any) -> list[TurnItem]:
    return [TurnItem(role=role, content=text, occurred_at=DAY + timedelta(minutes=n), **fields)
            for n, (role, text) in enumerate(conversation)]


def turns(db: psycopg.Connection, instance: str) -> list[tuple]:
    """The instance's turn memories in event-time order, with their first chunk."""
    return db.execute(
        "SELECT m.id, m.user_id, m.visibility_scope, m.audience_key, m.memory_scope,"
        "       m.session_key, m.content, m.occurred_at, m.previous_memory_id,"
        "       m.assertion_id, m.metadata, c.context, c.embedding IS NOT NULL,"
        "       c.context_embedding IS NOT NULL"
        "  FROM agent_memories m JOIN agent_memory_chunks c"
        "    ON c.memory_id = m.id AND c.chunk_index = 0"
        " WHERE m.instance_key = %s AND m.source_type = 'message'"
        " ORDER BY m.occurred_at", (instance,)).fetchall()


def test_each_user_and_assistant_item_becomes_a_turn_of_its_author(db, settings, instance):
    said = items() + [TurnItem(role="tool", content='{"weather": "sunny"}'),
                      TurnItem(role="system", content="You are a helpful assistant.")]
    appended = append_items(db, settings, ctx_of(instance), said)

    found = turns(db, instance)
    ids = [item.id for item in appended.items]
    assert [row[0] for row in found] == ids[:len(CONVERSATION)]   # tool and system: none
    first, second, third = found[:3]
    for row in found:
        memory_id, user, kind, key, scope, session, content, *_ = row
        assert (user, kind, key, scope, session) == ("ben", "private", "ben", "session",
                                                     SESSION)
        assert row[9] is None                                      # no assertion
        assert row[10] == {"memoryClass": "session", "sourceMessageId": str(memory_id)}
        assert row[12]                                             # the turn's vector
    assert [row[6] for row in found] == [text for _, text in CONVERSATION]
    assert [row[7] for row in found] == [DAY + timedelta(minutes=n)
                                         for n in range(len(CONVERSATION))]
    # Linked and given the context a turn stored as a memory gets (memories/turns.py).
    assert first[8] is None and second[8] == first[0] and third[8] == second[0]
    assert first[11] == date_words(DAY) and not first[13]
    assert third[11] == f"{date_words(DAY)}\n{CONVERSATION[0][1]}\n{CONVERSATION[1][1]}"
    assert third[13]                                               # its context vector


def test_a_conversation_ranks_the_same_appended_or_stored_as_memories(db, settings):
    appended, stored = f"inst-a-{id(db)}", f"inst-s-{id(db)}"
    append_items(db, settings, ctx_of(appended), items())
    for n, (_, text) in enumerate(CONVERSATION):
        store_memory(db, settings, ctx_of(stored), MemoryWrite(
            text, occurred_at=DAY + timedelta(minutes=n), visibility="private"))

    for question in QUESTIONS:
        ranked = {instance: [(h.content, round(h.score, 4)) for h in search_memories(
            db, settings, ctx_of(instance, session=None), question, limit=5, stamp=False)]
            for instance in (appended, stored)}
        assert ranked[appended] and ranked[appended] == ranked[stored], question
    copied = ("SELECT m.content, (SELECT array_agg(x.content ORDER BY x.occurred_at)"
              "   FROM agent_memories x WHERE x.instance_key = m.instance_key"
              "    AND x.id = ANY(c.context_memory_ids))"
              "  FROM agent_memories m JOIN agent_memory_chunks c"
              "    ON c.memory_id = m.id AND c.chunk_index = 0"
              " WHERE m.instance_key = %s ORDER BY m.occurred_at")
    # Both ways name the same turns as copied (none: in order, the links lead to them).
    named = [db.execute(copied, (instance,)).fetchall() for instance in (appended, stored)]
    assert named[0] == named[1] and len(named[0]) == len(CONVERSATION)


def test_an_answer_is_found_through_the_question_before_it(db, settings, instance):
    append_items(db, settings, ctx_of(instance), items())
    hits = search_memories(db, settings, ctx_of(instance, session=None),
                           "naming the puppy", limit=3, stamp=False)
    assert CONVERSATION[2][1] in [h.content for h in hits]   # "Rex!": no word of the question


def test_context_search_answers_the_item_once_ranked_as_a_turn(db, settings, instance):
    appended = append_items(db, settings, ctx_of(instance), items())
    found = context_search(db, settings, ctx_of(instance, session=None), "bakery job",
                           limit=10)
    item = next(i for i in found if "bakery" in i.content)
    assert item.id == f"message:{appended.items[5].id}" and item.kind == "message"
    # The history arm leaves the caller's own recalled items to the memory arm: their words
    # count once.
    assert item.found_by == ["memories"]
    assert [i.content for i in found].count(item.content) == 1
    assert not any(i.id.startswith("memory:") for i in found)


def test_a_participant_reads_anothers_item_but_never_recalls_it_as_theirs(db, settings,
                                                                         instance):
    shared = "agent:main:standup"
    append_items(db, settings, ctx_of(instance, session=shared), items())
    with db.transaction():
        add_session_participant(db, instance, shared, "ana")
    assert {row[3] for row in turns(db, instance)} == {"ben"}

    ana = ctx_of(instance, user="ana", session=shared)
    assert search_memories(db, settings, ana, "bakery dough shifts", stamp=False) == []
    via_history = context_search(db, settings, ana, "bakery dough shifts", limit=10)
    bakery = [i for i in via_history if "bakery" in i.content]
    assert bakery and all(i.found_by == ["history"] for i in bakery)
    # Another user of the instance finds nothing at all.
    eve = ctx_of(instance, user="eve", session=None)
    assert not [i for i in context_search(db, settings, eve, "bakery dough shifts", limit=10)
                if "bakery" in i.content]


def test_the_turn_goes_with_its_item(db, settings, instance):
    appended = append_items(db, settings, ctx_of(instance), items())
    first, second, third = (item.id for item in appended.items[:3])

    db.execute("DELETE FROM agent_context_messages WHERE id = %s", (first,))
    db.execute("UPDATE agent_context_messages SET content = 'redacted' WHERE id = %s",
               (second,))
    db.execute("UPDATE agent_context_messages SET metadata = '{\"seen\": true}' WHERE id = %s",
               (third,))                                   # not the text: the turn stays
    remaining = {row[0] for row in turns(db, instance)}
    assert first not in remaining and second not in remaining and third in remaining
    # Nothing of the removed turns' text is left in the turns after them (migration 0017).
    assert not db.execute("SELECT count(*) FROM agent_memory_chunks WHERE instance_key = %s"
                          " AND (context LIKE '%%Barcelona%%' OR content LIKE '%%Barcelona%%')",
                          (instance,)).fetchone()[0]


def test_a_truncate_of_the_items_takes_every_turn(conn, database_url):
    settings = hash_embedding_settings(database_url)
    append_items(conn, settings, ctx_of("trunc"), items())
    store_memory(conn, settings, ctx_of("trunc", session=None), MemoryWrite("A plain note."))
    conn.execute("TRUNCATE agent_context_messages CASCADE")
    assert conn.execute("SELECT source_type, count(*) FROM agent_memories GROUP BY 1"
                        ).fetchall() == [("fact", 1)]


def test_a_provider_failure_keeps_the_turns_found_by_their_words(db, settings, instance):
    off = settings.model_copy(update={"session_turn_recall": False})
    appended = append_items(db, off, ctx_of(instance), items())
    assert turns(db, instance) == []                       # off: the items only

    written = recall_turns(db, settings, instance, SESSION, [i.id for i in appended.items],
                           provider=OutageEmbedder())
    found = turns(db, instance)
    assert written == len(found) == len(CONVERSATION)
    assert not any(row[12] or row[13] for row in found)    # keyword-only, the backlog's
    assert found[2][8] == found[1][0] and found[2][11]     # linked, with its context
    hits = search_memories(db, settings, ctx_of(instance, session=None), "bakery shifts",
                           stamp=False)
    assert any("bakery" in h.content for h in hits[:2])   # or its answer, by its context
    # A repeated call writes nothing more.
    assert recall_turns(db, settings, instance, SESSION, [i.id for i in appended.items]) == 0


def test_a_fact_with_a_turns_text_is_a_memory_of_its_own(db, settings, instance):
    append_items(db, settings, ctx_of(instance), items())
    stored = store_memory(db, settings, ctx_of(instance, session=None),
                          MemoryWrite(CONVERSATION[4][1], visibility="private"))
    assert not stored.deduplicated and stored.assertion_id is not None


class _WrongSizeEmbedder(OutageEmbedder):
    """Says 1536 dimensions and answers 7: the database refuses the vectors."""

    def embed_documents(self, texts):
        return np.ones((len(texts), 7), dtype=np.float32)


def test_a_database_error_loses_only_the_turns_never_the_items(db, settings, instance, caplog):
    off = settings.model_copy(update={"session_turn_recall": False})
    appended = append_items(db, off, ctx_of(instance), items())
    ids = [i.id for i in appended.items]

    assert recall_turns(db, settings, instance, SESSION, ids,
                        provider=_WrongSizeEmbedder()) == 0
    assert turns(db, instance) == []
    assert db.execute("SELECT count(*) FROM agent_context_messages WHERE instance_key = %s",
                      (instance,)).fetchone()[0] == len(CONVERSATION)
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert f"{len(CONVERSATION)} session items stored without their turn memories" in logged
    assert SESSION not in logged and "Barcelona" not in logged
    # The connection is usable again: the next call recalls them.
    assert recall_turns(db, settings, instance, SESSION, ids) == len(CONVERSATION)
