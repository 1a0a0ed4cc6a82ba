"""A conversation imported as JSON Lines becomes conversation turns (memories/bulk/turns.py):
each turn linked to the turn before it in its session, with the context text and the context
vector a turn written through ``store_memory`` gets, whatever the rows' order in the file.
Real PostgreSQL, hash embeddings."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import numpy as np

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from tests.memories.bulk_support import EMBEDDER, run

START = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
TURNS = ["Caroline: Hey Mel! Good to see you!",
         "Melanie: Hey Caroline! What did you end up naming the puppy?",
         "Caroline: Rex, after my grandpa's old companion.",
         "Melanie: Love it. Does he sleep in your bed already?"]


def _turns(conn, instance: str) -> dict[str, tuple]:
    """content -> (the content of the turn before, context, context vector, the contents of
    the turns the context names as copied, oldest first)."""
    rows = conn.execute(
        "SELECT m.content, p.content, c.context, c.context_embedding,"
        "       (SELECT array_agg(x.content ORDER BY x.occurred_at) FROM agent_memories x"
        "         WHERE x.instance_key = m.instance_key AND x.id = ANY(c.context_memory_ids))"
        "  FROM agent_memories m"
        "  LEFT JOIN agent_memories p ON p.instance_key = m.instance_key"
        "                            AND p.id = m.previous_memory_id"
        "  JOIN agent_memory_chunks c ON c.memory_id = m.id AND c.chunk_index = 0"
        " WHERE m.instance_key = %s", (instance,)).fetchall()
    return {content: (previous, context,
                      None if vector is None else np.asarray(vector.to_numpy()), copied)
            for content, previous, context, vector, copied in rows}


def test_an_imported_conversation_ranks_like_one_written_turn_by_turn(db, module_database_url):
    settings = Settings(database_url=module_database_url, _env_file=None)  # type: ignore[call-arg]
    imported, written = f"bulk-turns-{uuid.uuid4().hex[:8]}", f"one-{uuid.uuid4().hex[:8]}"
    rows = [{"content": text, "user_id": "mel", "session_key": "chat-1",
             "visibility": "private", "source_type": "fact",
             "occurred_at": (START + timedelta(seconds=30 * n)).isoformat()}
            for n, text in enumerate(TURNS)]
    stats = run(db, settings, imported, list(reversed(rows)))  # the file's order is no order
    assert stats.accepted == 4 and stats.turns_linked == 4
    ctx = AccessContext(written, user_id="mel", session_key="chat-1")
    for n, text in enumerate(TURNS):
        store_memory(db, settings, ctx, MemoryWrite(
            text, visibility="private", occurred_at=START + timedelta(seconds=30 * n)),
            embedder=EMBEDDER)
    bulk, single = _turns(db, imported), _turns(db, written)
    assert bulk.keys() == single.keys()
    for text in TURNS:
        (b_prev, b_context, b_vector, b_copied), (s_prev, s_context, s_vector, s_copied) = (
            bulk[text], single[text])
        assert (b_prev, b_context, b_copied) == (s_prev, s_context, s_copied), text
        assert (b_vector is None) == (s_vector is None), text
        if b_vector is not None:
            assert np.allclose(b_vector, s_vector, atol=1e-6)
    assert bulk[TURNS[0]][0] is None and bulk[TURNS[2]][0] == TURNS[1]
    # In order, the links lead from every copied turn to the turn: no context names them.
    assert all(bulk[text][3] is None for text in TURNS)
    # Importing again links nothing more (the rows are deduplicated, the turns linked).
    assert run(db, settings, imported, rows).turns_linked == 0


def test_a_turn_written_after_an_import_follows_the_imported_turns(db, module_database_url):
    settings = Settings(database_url=module_database_url, _env_file=None)  # type: ignore[call-arg]
    instance = f"bulk-then-api-{uuid.uuid4().hex[:8]}"
    run(db, settings, instance, [{"content": TURNS[1], "user_id": "mel",
                                  "session_key": "chat-1", "visibility": "private",
                                  "source_type": "fact", "occurred_at": START.isoformat()}])
    ctx = AccessContext(instance, user_id="mel", session_key="chat-1")
    store_memory(db, settings, ctx, MemoryWrite(
        TURNS[2], visibility="private", occurred_at=START + timedelta(seconds=30)),
        embedder=EMBEDDER)
    assert _turns(db, instance)[TURNS[2]][0] == TURNS[1]


def test_an_imported_turn_after_a_late_one_names_it_and_loses_it_with_it(
        db, module_database_url):
    """A turn written late is copied by the next imported turn, whose link leads elsewhere:
    the imported context names the turns it copies, so deleting the late turn clears it."""
    settings = Settings(database_url=module_database_url, _env_file=None)  # type: ignore[call-arg]
    instance = f"bulk-late-{uuid.uuid4().hex[:8]}"
    ctx = AccessContext(instance, user_id="mel", session_key="chat-1")
    for seconds, text in ((0, TURNS[0]), (60, TURNS[2]), (30, TURNS[1])):  # TURNS[1] late
        store_memory(db, settings, ctx, MemoryWrite(
            text, visibility="private", occurred_at=START + timedelta(seconds=seconds)),
            embedder=EMBEDDER)
    run(db, settings, instance, [{"content": TURNS[3], "user_id": "mel",
                                  "session_key": "chat-1", "visibility": "private",
                                  "source_type": "fact",
                                  "occurred_at": (START + timedelta(seconds=90)).isoformat()}])
    imported = _turns(db, instance)[TURNS[3]]
    assert imported[0] == TURNS[2] and imported[3] == TURNS[1:3]  # linked to one, copies two
    db.execute("DELETE FROM agent_memories WHERE instance_key = %s AND content = %s",
               (instance, TURNS[1]))
    assert _turns(db, instance)[TURNS[3]][1:4] == (None, None, None)
