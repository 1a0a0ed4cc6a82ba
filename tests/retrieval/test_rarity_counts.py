"""The rarity statistics are exact counts of the caller's instance (migration 0033,
retrieval/lexicon.py): after every write, deletion, rolled-back write, text change and
TRUNCATE they equal a recount of the rows; one instance's words neither move another's
weights nor its ranking; the last row with a word takes the word with it; a small instance
keeps every word generating; the migration counts the rows stored before it."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import psycopg
import pytest
from pgvector.psycopg import register_vector

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval import lexicon
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.db import migrations
from memory_platform.foundation.settings import PROJECT_ROOT, Settings
from memory_platform.shared.access import AccessContext
from tests.graph.support import apply, batch, claim, entity, extraction, fact
from tests.support.settings import hash_embedding_settings

CORPORA = {lexicon.CHUNKS: ("agent_memory_chunks", "content_tsv"),
           lexicon.CLAIMS: ("agent_knowledge_claims", "claim_tsv")}


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return hash_embedding_settings(database_url, data_dir=tmp_path / "state")


def recount(conn: psycopg.Connection, instance: str, corpus: str) -> dict[str, int]:
    """What the counts must be: every lexeme of the corpus' rows of ``instance``, and ''
    for the rows, counted from the rows themselves."""
    table, column = CORPORA[corpus]
    return dict(conn.execute(
        f"SELECT x, count(*) FROM {table} t,"  # noqa: S608 (constants)
        f" unnest(array_append(tsvector_to_array(t.{column}), '')) AS x"
        " WHERE t.instance_key = %s GROUP BY x", (instance,)).fetchall())


def stored(conn: psycopg.Connection, instance: str, corpus: str) -> dict[str, int]:
    return dict(conn.execute(
        "SELECT lexeme, documents FROM agent_memory_lexemes"
        " WHERE instance_key = %s AND corpus = %s", (instance, corpus)).fetchall())


def write(conn, settings: Settings, instance: str, text: str, user: str = "ada") -> uuid.UUID:
    return store_memory(conn, settings, AccessContext(instance, user_id=user),
                        MemoryWrite(text, source_type="manual", visibility="team")).id


def test_the_counts_equal_a_recount_after_writes_and_deletions(conn, settings, instance):
    ids = [write(conn, settings, instance, f"Invoice {n} of Nordlicht GmbH is overdue"
                 f"{' again' if n % 3 else ''}; the Kanzlei sent reminder {n % 4}.")
           for n in range(12)]
    long = write(conn, settings, instance, " ".join(
        f"Paragraph {n}: the quarterly Umsatzsteuer return of client {n} is due." * 3
        for n in range(40)))  # several chunks of one memory, one statement
    assert conn.execute("SELECT count(*) FROM agent_memory_chunks WHERE memory_id = %s",
                        (long,)).fetchone()[0] > 1
    assert stored(conn, instance, lexicon.CHUNKS) == recount(conn, instance, lexicon.CHUNKS)
    assert stored(conn, instance, lexicon.CHUNKS)[""] == 12 + conn.execute(
        "SELECT count(*) FROM agent_memory_chunks WHERE memory_id = %s", (long,)).fetchone()[0]

    conn.execute("DELETE FROM agent_memories WHERE id = ANY(%s)", (ids[:5] + [long],))
    assert stored(conn, instance, lexicon.CHUNKS) == recount(conn, instance, lexicon.CHUNKS)
    assert "umsatzsteu" not in stored(conn, instance, lexicon.CHUNKS)  # its last row went


def test_a_rolled_back_write_counts_nothing(conn, settings, instance):
    write(conn, settings, instance, "The Kanzlei closes at six.")
    before = stored(conn, instance, lexicon.CHUNKS)
    with pytest.raises(RuntimeError), conn.transaction():
        write(conn, settings, instance, "A zebrafinch visited the Kanzlei.")
        assert stored(conn, instance, lexicon.CHUNKS)["zebrafinch"] == 1  # its own snapshot
        raise RuntimeError("abandon the write")
    assert stored(conn, instance, lexicon.CHUNKS) == before


def test_a_chunk_whose_text_changes_is_counted_again(conn, settings, instance):
    memory = write(conn, settings, instance, "The quokka report is late.")
    write(conn, settings, instance, "The wombat report is on time.")
    conn.execute("UPDATE agent_memory_chunks SET content = 'The platypus report is late.'"
                 " WHERE memory_id = %s", (memory,))
    counts = stored(conn, instance, lexicon.CHUNKS)
    assert counts == recount(conn, instance, lexicon.CHUNKS)
    assert "quokka" not in counts and counts["platypus"] == 1 and counts["report"] == 2


def test_the_last_row_of_an_instance_takes_every_count_with_it(conn, settings, instance):
    memory = write(conn, settings, instance, "Ada's quokkaberry allergy is severe.")
    assert stored(conn, instance, lexicon.CHUNKS)
    conn.execute("DELETE FROM agent_memories WHERE id = %s", (memory,))
    assert conn.execute("SELECT count(*) FROM agent_memory_lexemes WHERE instance_key = %s",
                        (instance,)).fetchone()[0] == 0


def test_truncate_leaves_no_counts(conn, settings, instance):
    write(conn, settings, instance, "The Kanzlei closes at six.")
    conn.execute("TRUNCATE agent_memories CASCADE")
    assert conn.execute("SELECT count(*) FROM agent_memory_lexemes"
                        " WHERE corpus = 'chunks'").fetchone()[0] == 0


def test_claims_are_counted_as_their_own_corpus(conn, settings, instance):
    """Graph search's words: the claim texts, counted through insert, delete, a text change
    and TRUNCATE, apart from the chunks."""
    source = fact(conn, settings, instance, "The Nord office closes at six on Fridays.")
    other = fact(conn, settings, instance, "The Süd office opens at eight.")
    apply(conn, batch(source, other), extraction(
        [entity("n", "Nord office", source), entity("s", "Süd office", other)],
        [claim("n", "closes_at", source, value="six on Fridays"),
         claim("s", "opens_at", other, value="eight")]))
    claims = stored(conn, instance, lexicon.CLAIMS)
    assert claims == recount(conn, instance, lexicon.CLAIMS)
    assert claims[""] == 2 and claims["offic"] == 2  # the English stem of "office"
    conn.execute("DELETE FROM agent_knowledge_claims WHERE instance_key = %s"
                 " AND predicate = 'opens_at'", (instance,))
    assert stored(conn, instance, lexicon.CLAIMS) == recount(conn, instance, lexicon.CLAIMS)
    counts = lexicon.rarity(conn, instance, ["office", "fridays"], lexicon.CLAIMS)
    assert (counts.rows, counts.documents) == (1, {"office": 1, "fridays": 1})
    conn.execute("UPDATE agent_knowledge_claims SET assertion_text = 'The Nord desk closes.'"
                 " WHERE instance_key = %s", (instance,))
    assert stored(conn, instance, lexicon.CLAIMS) == recount(conn, instance, lexicon.CLAIMS)
    assert "offic" not in stored(conn, instance, lexicon.CLAIMS)
    conn.execute("TRUNCATE agent_knowledge_claims CASCADE")
    assert stored(conn, instance, lexicon.CLAIMS) == {}
    assert stored(conn, instance, lexicon.CHUNKS) == recount(conn, instance, lexicon.CHUNKS)


def test_another_instance_moves_neither_the_weights_nor_the_ranking(conn, settings, instance):
    """A tenant's vocabulary stays its own: the other instance writes the question's words
    a hundred times, and this instance's weights, ranking and scores stay as they were."""
    for n in range(30):
        write(conn, settings, instance, f"Client {n} sent the {'payroll' if n % 5 else 'audit'}"
                                        f" documents for quarter {n % 4}.")
    question = "who sent the audit documents"
    ctx = AccessContext(instance, user_id="ada")

    def observed() -> tuple:
        counts = lexicon.rarity(conn, instance, ["audit", "documents", "sent"])
        hits = search_memories(conn, settings, ctx, question, stamp=False, limit=10)
        return (lexicon.term_weights(counts),
                [(h.memory_id, h.score, h.keyword_score, h.vector_score) for h in hits])

    before = observed()
    neighbour = f"{instance}-neighbour"
    for n in range(100):
        write(conn, settings, neighbour, f"The audit {n} found nothing.")
    assert observed() == before
    # ...while its own writes count at once
    write(conn, settings, instance, "The audit of client 31 starts on Monday.")
    assert lexicon.term_weights(lexicon.rarity(conn, instance, ["audit"]))["audit"] \
        < before[0]["audit"]


def test_in_a_small_instance_every_word_generates(conn, settings, instance):
    """Below the keyword arm's match cap a word's matches are all ranked, so even a word in
    every chunk keeps generating candidates; above it, the share decides."""
    for n in range(40):
        write(conn, settings, instance, f"The quarterly report of team {n} is ready.")
    counts = lexicon.rarity(conn, instance, ["quarterly", "team"])
    assert counts.documents == {"quarterly": 40, "team": 40} and counts.rows == 40
    assert lexicon.selective_terms(counts, settings) == ["quarterly", "team"]
    capped = settings.model_copy(update={"retrieval_keyword_match_cap": 39})
    assert lexicon.selective_terms(counts, capped) == []


def test_the_migration_counts_the_rows_stored_before_it(empty_database_url, tmp_path):
    """A database with chunks and claims from before 0033 gets their exact counts."""
    earlier = tmp_path / "migrations"
    earlier.mkdir()
    for path in sorted((PROJECT_ROOT / "migrations").glob("*.sql")):
        if int(path.name[:4]) < 33:
            shutil.copy2(path, earlier / path.name)
    settings = hash_embedding_settings(empty_database_url, data_dir=tmp_path / "state")
    instance = f"pre-{uuid.uuid4().hex[:8]}"
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        migrations.migrate(conn, earlier)
        register_vector(conn)
        for n in range(5):
            write(conn, settings, instance, f"Invoice {n} of Nordlicht GmbH is overdue.")
        source = fact(conn, settings, instance, "The Nord office closes at six on Fridays.")
        apply(conn, batch(source), extraction(
            [entity("n", "Nord office", source)],
            [claim("n", "closes_at", source, value="six on Fridays")]))
        applied = migrations.migrate(conn, PROJECT_ROOT / "migrations")
        assert applied[0].version == 33
        for corpus in CORPORA:
            assert stored(conn, instance, corpus) == recount(conn, instance, corpus) != {}
