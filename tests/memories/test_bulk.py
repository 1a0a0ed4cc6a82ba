"""The bulk import applies store_memory's rules row by row, at COPY speed, and keeps the
generation's HNSW index usable."""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from pgvector.psycopg import register_vector

from memory_platform.features.memories.bulk import import_memories
from memory_platform.features.memories.bulk.indexes import (
    BULK_INDEX_TABLES,
    FULLTEXT_INDEXES,
    drop_fulltext_indexes,
    fulltext_index_exists,
    index_state,
    install_placeholders,
    repair_fulltext_indexes,
    repair_vector_index,
)
from memory_platform.features.memories.bulk.reader import (
    MalformedLine,
    NumberedRow,
    context_from_row,
    read_jsonl,
)
from memory_platform.features.memories.sharing import set_share_with_team
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext, Audience
from memory_platform.shared.embeddings.generations import index_name
from memory_platform.shared.ledger.assertions import ensure_assertion
from tests.memories.bulk_support import EMBEDDER, LOADER_ROWS, memories, run, snapshot
from tests.memories.support import OutageEmbedder
from tests.support.tables import row_counts

KEY = "hash:feature-hash-v1:32:v1"
LONG_FACT = " ".join(
    f"Satz {i}: Der Mandant Nordlicht reicht die Belege für Position {i} bis Freitag ein."
    for i in range(20)
)


# --- the same rules as store_memory ------------------------------------------------------------

PARITY_ROWS = [
    # a direct user without a preference row: derived private; a human fact activates
    {"content": "Anna prefers invoices as PDF by email.", "user_id": "anna",
     "source_type": "fact", "trust_class": "human_direct",
     "subject_refs": {"mandantId": "M-7", "note": "crm"}},
    # an explicit team fact that needs review (imported trust), with title, metadata and the
    # slot it fills
    {"content": "Die Steuererklärung 2024 für Nordlicht ist eingereicht.", "user_id": "ben",
     "visibility": "team", "source_type": "fact", "title": "Steuer", "metadata": {"crm": 1},
     "subject": "Steuererklärung 2024 Nordlicht", "predicate": "Stand"},
    # a workspace manual note without any identity
    {"content": "The office is closed on public holidays.", "visibility": "workspace"},
    # an unlinked channel thread: channel audience, channel scope
    {"content": "Release train leaves every Thursday.", "channel_thread_key": "C1/170.1",
     "channel_type": "slack", "source_type": "fact", "trust_class": "human_direct"},
    # a session summary: session scope, no assertion
    {"content": "Session summary: discussed the Q3 roadmap with Lea.", "user_id": "lea",
     "session_key": "s-1", "source_type": "summary"},
    # a multi-chunk fact: the assertion gets the whole text's vector
    {"content": LONG_FACT, "user_id": "anna", "visibility": "team", "source_type": "fact",
     "trust_class": "human_direct", "assertion_type": "preference"},
]


def _write_one_by_one(conn, settings, instance, rows):
    for row in rows:
        ctx = context_from_row(instance)(row)
        store_memory(conn, settings, ctx, MemoryWrite(
            content=row["content"], source_type=row.get("source_type", "manual"),
            memory_class="import", visibility=row.get("visibility"),
            subject_refs=row.get("subject_refs", {}),
            assertion_type=row.get("assertion_type", "fact"),
            trust_class=row.get("trust_class", "imported"), title=row.get("title"),
            metadata=row.get("metadata", {}), subject=row.get("subject"),
            predicate=row.get("predicate"),
        ), embedder=EMBEDDER)


def test_imported_rows_equal_the_same_rows_written_through_store_memory(db, module_database_url,
                                                                        tmp_path):
    settings = Settings(database_url=module_database_url, _env_file=None)  # type: ignore[call-arg]
    bulk_instance, single_instance = f"bulk-{uuid.uuid4().hex[:8]}", f"one-{uuid.uuid4().hex[:8]}"

    stats = run(db, settings, bulk_instance, PARITY_ROWS)
    _write_one_by_one(db, settings, single_instance, PARITY_ROWS)

    assert stats.accepted == len(PARITY_ROWS) and not stats.rejected
    imported, written = snapshot(db, bulk_instance), snapshot(db, single_instance)
    assert imported == written
    # and the rules did apply (not merely the same mistakes twice)
    by_content = {s["memory"]["content"]: s for s in imported}
    anna = by_content["Anna prefers invoices as PDF by email."]
    assert (anna["memory"]["visibility_scope"], anna["memory"]["memory_scope"]) == ("private",
                                                                                     "user")
    assert anna["assertion"]["status"] == "active" and len(anna["assertion_vectors"]) == 1
    assert anna["memory"]["metadata"] == {"memoryClass": "import"}
    team = by_content["Die Steuererklärung 2024 für Nordlicht ist eingereicht."]
    assert team["assertion"]["status"] == "candidate"
    assert team["reviews"] == [{"decision": "defer", "reviewer_kind": "policy",
                                "reason_code": "not_direct_human"}]
    assert team["memory"]["subject_refs"] == {"userId": "ben"}
    assert (team["assertion"]["subject"], team["assertion"]["predicate"]) == (
        "Steuererklärung 2024 Nordlicht", "Stand")
    assert (anna["assertion"]["subject"], anna["assertion"]["predicate"]) == (
        "mandantId=M-7; note=crm", "fact")                  # slotted by its subject refs
    channel = by_content["Release train leaves every Thursday."]
    assert channel["memory"]["visibility_scope"] == "channel"
    long_fact = by_content[LONG_FACT]
    assert len(long_fact["chunks"]) > 1 and long_fact["evidence"][0]["excerpt"] == \
        long_fact["chunks"][0]["content"]


RESTATEMENTS = [
    # an imported fact waits for review ...
    {"content": "Ben's team deploys on Fridays.", "user_id": "ben", "visibility": "team",
     "source_type": "fact"},
    # ... a person restating it (another subject, so another memory) activates it, and this
    # row stores the assertion's vector
    {"content": "Ben's team deploys on Fridays.", "user_id": "ben", "visibility": "team",
     "source_type": "fact", "trust_class": "human_direct", "subject_refs": {"taskId": 4}},
    # an exact repeat of an undecided fact, said by a person: a dedup hit that activates it
    {"content": "The VAT number is on every invoice.", "user_id": "ben", "visibility": "team",
     "source_type": "fact"},
    {"content": "The VAT number is on every invoice.", "user_id": "ben", "visibility": "team",
     "source_type": "manual", "trust_class": "human_direct"},
    # a repeat of a fact written before the import, restated by a person
    {"content": "Lea approves travel costs.", "user_id": "lea", "visibility": "team",
     "source_type": "fact", "trust_class": "human_direct"},
    # restatements that do not qualify change nothing
    {"content": "Quarterly reports go to Anna.", "user_id": "ben", "visibility": "team",
     "source_type": "fact"},
    {"content": "Quarterly reports go to Anna.", "user_id": "ben", "visibility": "workspace",
     "source_type": "fact", "trust_class": "human_direct"},
    {"content": "Quarterly reports go to Anna.", "user_id": "ben", "visibility": "team",
     "source_type": "fact", "subject_refs": {"mandantId": "M-1"}},
]


@pytest.mark.parametrize("batch_size", [1, 3, 50])
def test_restated_facts_take_the_same_ledger_decisions_as_one_by_one_writes(
        db, module_database_url, batch_size):
    settings = Settings(database_url=module_database_url, _env_file=None)  # type: ignore[call-arg]
    bulk_instance, single_instance = f"bulk-{uuid.uuid4().hex[:8]}", f"one-{uuid.uuid4().hex[:8]}"
    earlier = [{"content": "Lea approves travel costs.", "user_id": "lea", "visibility": "team",
                "source_type": "fact"}]
    _write_one_by_one(db, settings, bulk_instance, earlier)
    _write_one_by_one(db, settings, single_instance, earlier)

    stats = run(db, settings, bulk_instance, RESTATEMENTS, batch_size=batch_size)
    _write_one_by_one(db, settings, single_instance, RESTATEMENTS)

    assert (stats.accepted, stats.deduplicated) == (6, 2)
    assert snapshot(db, bulk_instance) == snapshot(db, single_instance)
    states = dict(db.execute(
        "SELECT assertion_text, status || '/' || review_state FROM agent_memory_assertions"
        " WHERE instance_key = %s AND audience_kind = 'team'", (bulk_instance,)).fetchall())
    assert states == {"Ben's team deploys on Fridays.": "active/policy_approved",
                      "The VAT number is on every invoice.": "active/policy_approved",
                      "Lea approves travel costs.": "active/policy_approved",
                      "Quarterly reports go to Anna.": "candidate/pending"}


def test_a_user_sharing_with_the_team_imports_to_team(db, hash_settings, instance):
    set_share_with_team(db, instance, "carla", True)
    run(db, hash_settings, instance, [{"content": "Carla shares this.", "user_id": "carla"},
                                      {"content": "Dora keeps this.", "user_id": "dora"}])
    assert {m["user_id"]: m["visibility_scope"] for m in memories(db, instance)} == {
        "carla": "team", "dora": "private"}


# --- rejected rows -----------------------------------------------------------------------------


def test_a_credential_row_is_rejected_with_its_line_and_the_other_rows_land(db, hash_settings,
                                                                            instance):
    rows = [{"content": "First harmless note.", "visibility": "workspace"},
            {"content": "Login for the portal: password: Sommer2024!", "visibility": "workspace"},
            {"content": "Third harmless note.", "visibility": "workspace"}]
    stats = run(db, hash_settings, instance, rows)
    assert stats.accepted == 2
    [rejection] = stats.rejected
    assert rejection.line == 2 and rejection.code == "credential_detected"
    assert "password" in rejection.reason and "Sommer2024" not in rejection.reason
    assert [m["content"] for m in memories(db, instance)] == ["First harmless note.",
                                                              "Third harmless note."]


def test_a_credential_in_subject_refs_is_rejected(db, hash_settings, instance):
    stats = run(db, hash_settings, instance, [
        {"content": "Deploy notes.", "visibility": "workspace",
         "subject_refs": {"documentId": "sk-proj-abcdefghijklmnopqrstuvwxyz123456"}}])
    assert stats.accepted == 0 and stats.rejected[0].code == "credential_detected"


@pytest.mark.parametrize(("row", "reason"), [
    ({"content": "x", "visibility": "workspace", "colour": "red"}, "unknown field(s): colour"),
    ({"visibility": "workspace"}, "content is missing"),
    ({"content": 42, "visibility": "workspace"}, "content must be a string"),
    ({"content": "   ", "visibility": "workspace"}, "content is empty"),
    ({"content": "x", "visibility": "everyone"}, "visibility must be one of"),
    ({"content": "x", "user_id": 7}, "user_id must be a non-empty string"),
    ({"content": "x", "visibility": "workspace", "subject_refs": ["a"]},
     "subject_refs must be an object"),
    ({"content": "x", "visibility": "workspace", "metadata": "m"}, "metadata must be an object"),
    ({"content": "x", "visibility": "workspace", "source_type": "dream"},
     "source_type must be one of"),
    ({"content": "x", "visibility": "workspace", "trust_class": "boss"},
     "trust_class must be one of"),
    ({"content": "x", "visibility": "workspace", "title": ["t"]}, "title must be a string"),
    ({"content": "x", "visibility": "workspace", "title": "Wifi password: hunter22"},
     "title looks like it contains a password"),
    ({"content": "x", "visibility": "workspace", "title": "Bell\x07"},
     "title contains the control character U+0007"),
    ({"content": "x", "visibility": "private"}, "a private memory needs an authenticated user"),
    ({"content": "x", "visibility": "channel", "user_id": "u"},
     "a channel memory needs a channel thread or group room"),
    (["content", "x"], "a row must be a JSON object, not list"),
])
def test_a_row_that_breaks_a_rule_is_rejected_with_a_clear_reason(db, hash_settings, instance,
                                                                  row, reason):
    stats = run(db, hash_settings, instance,
                [row, {"content": "The good row.", "visibility": "workspace"}])
    assert stats.accepted == 1
    [rejection] = stats.rejected
    assert rejection.line == 1 and reason in rejection.reason


def test_malformed_json_lines_are_rejected_by_line_and_never_abort(db, hash_settings, instance):
    lines = [b'{"content": "one", "visibility": "workspace"}\n', b"\n", b'{"content": "two",\n',
             b'\xff\xfe{"content": "three"}\n', b'{"content": NaN}\n',
             b'{"content": "four", "visibility": "workspace"}\n']
    items = list(read_jsonl(lines))
    assert [type(i) for i in items] == [NumberedRow, MalformedLine, MalformedLine,
                                        MalformedLine, NumberedRow]
    stats = run(db, hash_settings, instance, items)
    assert stats.rows == 5 and stats.accepted == 2
    assert [(r.line, r.code) for r in stats.rejected] == [
        (3, "malformed_json"), (4, "malformed_json"), (5, "malformed_json")]
    assert "not valid UTF-8" in stats.rejected[1].reason


# --- dedup -------------------------------------------------------------------------------------


def test_duplicates_within_one_batch_are_written_once(db, hash_settings, instance):
    rows = [{"content": "Lunch is at noon.", "visibility": "workspace"},
            {"content": "  lunch IS at   noon. ", "visibility": "workspace"},
            {"content": "Lunch is at noon.", "visibility": "workspace",
             "subject_refs": {"mandantId": "M-1"}}]
    stats = run(db, hash_settings, instance, rows)
    assert (stats.accepted, stats.deduplicated) == (2, 1)
    assert row_counts(db, instance)["agent_memories"] == 2


def test_rows_already_in_the_database_are_deduplicated_across_batches_and_runs(
        db, hash_settings, instance):
    store_memory(db, hash_settings, AccessContext(instance),
                 MemoryWrite("Written earlier by an agent.", source_type="manual",
                             visibility="workspace"), embedder=EMBEDDER)
    rows = [{"content": f"Note number {i}.", "visibility": "workspace"} for i in range(5)]
    rows += [{"content": "Note number 1.", "visibility": "workspace"},  # an earlier batch's
             {"content": "Written earlier by an agent.", "visibility": "workspace"}]
    first = run(db, hash_settings, instance, rows, batch_size=2)
    assert (first.accepted, first.deduplicated) == (5, 2)
    again = run(db, hash_settings, instance, rows, batch_size=3)
    assert (again.accepted, again.deduplicated) == (0, 7)
    assert row_counts(db, instance)["agent_memories"] == 6


def test_a_repeated_fact_in_one_audience_is_one_assertion_citing_each_source(
        db, hash_settings, instance):
    rows = [{"content": "Anna likes green tea.", "user_id": "anna", "visibility": "team",
             "source_type": "fact", "trust_class": "human_direct"},
            {"content": "Anna likes green tea.", "user_id": "anna", "visibility": "team",
             "source_type": "fact", "trust_class": "human_direct",
             "subject_refs": {"mandantId": "M-2"}}]
    stats = run(db, hash_settings, instance, rows)
    assert (stats.accepted, stats.assertions_created, stats.evidence) == (2, 1, 2)
    counts = row_counts(db, instance)
    assert (counts["agent_memory_assertions"], counts["agent_memory_assertion_reviews"],
            counts["agent_memory_assertion_embeddings"]) == (1, 1, 1)


def test_an_assertion_committed_by_a_concurrent_writer_is_cited_not_duplicated(
        db, module_database_url, hash_settings, instance):
    text = "Nordlicht closes its books in March."
    with psycopg.connect(module_database_url) as other, \
            psycopg.connect(module_database_url, autocommit=True) as watcher:
        ensure_assertion(other, instance_key=instance, audience=Audience("team", instance),
                         text=text, assertion_type="fact", origin="explicit")
        outcome: dict[str, Any] = {}
        importer = threading.Thread(target=lambda: outcome.update(stats=run(
            db, hash_settings, instance, [{"content": text, "user_id": "ulf",
                                           "visibility": "team", "source_type": "fact"}])))
        importer.start()
        for _ in range(200):  # until the import waits on the uncommitted assertion
            if watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE datname ="
                               " current_database() AND wait_event_type = 'Lock'"
                               ).fetchone()[0]:
                break
            time.sleep(0.05)
        other.commit()
        importer.join(timeout=30)
    stats = outcome["stats"]
    assert (stats.accepted, stats.assertions_created, stats.evidence) == (1, 0, 1)
    counts = row_counts(db, instance)
    assert (counts["agent_memory_assertions"], counts["agent_memory_assertion_evidence"]) == (1, 1)
    memory = memories(db, instance)[0]
    assert memory["assertion_id"] == db.execute(
        "SELECT id FROM agent_memory_assertions WHERE instance_key = %s", (instance,)
    ).fetchone()[0]


# --- embeddings --------------------------------------------------------------------------------


def test_an_embedding_outage_imports_keyword_only_and_reports_it(db, hash_settings, instance):
    stats = run(db, hash_settings, instance,
                [{"content": "Keyword-only note.", "visibility": "workspace"}],
                embedder=OutageEmbedder())
    assert stats.accepted == 1 and stats.embedded == 0 and stats.keyword_only == 1
    assert "HTTP 503" in stats.embedding_errors[0]
    row = db.execute("SELECT embedding, embedding_key FROM agent_memory_chunks"
                     " WHERE instance_key = %s", (instance,)).fetchone()
    assert row == (None, None)


def test_a_row_the_database_refuses_is_rejected_alone(db, module_database_url, instance):
    # Evidence excerpts are capped at 2000 characters by the schema; with 3000-character
    # chunks a long fact fails in the database, and only that row is rejected.
    settings = Settings(database_url=module_database_url, chunk_target_chars=3000,
                        _env_file=None)  # type: ignore[call-arg]
    rows = [{"content": "Short fact.", "visibility": "team", "user_id": "u",
             "source_type": "fact"},
            {"content": "Langer Satz über Belege. " * 100, "visibility": "team",
             "user_id": "u", "source_type": "fact"},
            {"content": "Another short note.", "visibility": "workspace"}]
    stats = run(db, settings, instance, rows)
    assert stats.accepted == 2
    [rejection] = stats.rejected
    assert rejection.line == 2 and rejection.code == "database_error"
    assert row_counts(db, instance)["agent_memory_sources"] == 2


# --- the HNSW index around a large load --------------------------------------------------------


def _index_states(conn, key: str = KEY) -> set[str]:
    return {index_state(conn, table, key) for table in BULK_INDEX_TABLES}


def _plan(conn) -> str:
    query = EMBEDDER.embed_query("Belege Nordlicht")
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")
        return "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT id FROM agent_memory_chunks WHERE embedding_key = %s"
            " ORDER BY embedding::halfvec(32) <=> %s::halfvec(32) LIMIT 5", (KEY, query)))


def _rows(n: int) -> list[dict[str, Any]]:
    return [{"content": f"Beleg {i} für Nordlicht ist eingegangen.", "visibility": "workspace"}
            for i in range(n)]


def test_an_import_larger_than_the_index_rebuilds_it_and_vector_queries_use_it(
        db, module_database_url, instance):
    settings = Settings(database_url=module_database_url, import_rebuild_index_min_rows=20,
                        _env_file=None)  # type: ignore[call-arg]
    existing = db.execute("SELECT count(*) FROM agent_memory_chunks WHERE embedding_key = %s",
                          (KEY,)).fetchone()[0]
    stats = run(db, settings, instance, _rows(existing + 25), rebuild_index=None)
    assert stats.index_rebuilt and stats.index_seconds > 0
    assert _index_states(db) == {"hnsw"}
    assert index_name("agent_memory_chunks", KEY) in _plan(db)


def test_an_import_of_unknown_size_looks_ahead_to_decide(db, module_database_url, instance):
    settings = Settings(database_url=module_database_url, import_rebuild_index_min_rows=20,
                        _env_file=None)  # type: ignore[call-arg]
    existing = db.execute("SELECT count(*) FROM agent_memory_chunks WHERE embedding_key = %s",
                          (KEY,)).fetchone()[0]
    stats = run(db, settings, instance, iter(_rows(existing + 25)), rebuild_index=None)
    assert stats.index_rebuilt and stats.accepted == existing + 25
    assert _index_states(db) == {"hnsw"}


def test_a_small_import_keeps_the_index(db, hash_settings, instance):
    run(db, hash_settings, instance, _rows(1))  # the generation and its index exist
    oid = db.execute("SELECT to_regclass(%s)::oid",
                     (index_name("agent_memory_chunks", KEY),)).fetchone()[0]
    stats = run(db, hash_settings, f"{instance}-2", _rows(5), rebuild_index=None)
    assert not stats.index_rebuilt
    assert db.execute("SELECT to_regclass(%s)::oid",
                      (index_name("agent_memory_chunks", KEY),)).fetchone()[0] == oid


def test_a_failing_import_still_rebuilds_the_index(db, hash_settings, instance):
    def ctx_for_row(row):
        if row["content"].startswith("Beleg 7 "):
            raise RuntimeError("bug in the caller")
        return AccessContext(instance)

    with pytest.raises(RuntimeError, match="bug in the caller"):
        import_memories(db, hash_settings, ctx_for_row, _rows(10), embedder=EMBEDDER,
                        batch_size=3, rebuild_index=True)
    assert _index_states(db) == {"hnsw"}
    assert row_counts(db, instance)["agent_memories"] == 6  # the committed batches


def test_an_index_left_as_placeholder_by_a_crash_is_repaired(db, hash_settings, instance):
    run(db, hash_settings, instance, _rows(2))
    install_placeholders(db, KEY, BULK_INDEX_TABLES)  # what a killed import leaves behind
    assert _index_states(db) == {"placeholder"}
    assert repair_vector_index(db, hash_settings, KEY, EMBEDDER.dimensions)
    assert _index_states(db) == {"hnsw"}


def test_an_import_does_not_touch_the_index_another_import_is_loading(
        db, module_database_url, hash_settings, instance):
    with psycopg.connect(module_database_url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))",
                      (f"memory-import-index:{KEY}",))
        stats = run(db, hash_settings, instance, _rows(3), rebuild_index=True)
    assert not stats.index_rebuilt and "another import" in stats.index_note
    assert stats.accepted == 3 and _index_states(db) == {"hnsw"}


# --- the GIN full-text indexes around a large load --------------------------------------------


def _fulltext_definitions(conn) -> dict[str, str | None]:
    return {name: conn.execute("SELECT pg_get_indexdef(to_regclass(%s))", (name,)).fetchone()[0]
            for name in FULLTEXT_INDEXES}


def test_a_large_import_rebuilds_the_fulltext_indexes_as_the_migrations_define_them(
        db, hash_settings, instance):
    before = _fulltext_definitions(db)
    assert all(before.values())
    stats = run(db, hash_settings, instance, _rows(12), batch_size=5, rebuild_index=True)
    assert stats.fulltext_rebuilt and stats.index_rebuilt and stats.accepted == 12
    assert _fulltext_definitions(db) == before
    # the rows loaded without the index are found through the rebuilt one
    with db.transaction():
        db.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(r[0] for r in db.execute(
            "EXPLAIN SELECT id FROM agent_memory_chunks"
            " WHERE content_tsv @@ plainto_tsquery('german', 'Nordlicht')"))
        found = db.execute(
            "SELECT count(*) FROM agent_memory_chunks WHERE instance_key = %s"
            " AND content_tsv @@ plainto_tsquery('german', 'Nordlicht')", (instance,)
        ).fetchone()[0]
    assert "agent_memory_chunks_tsv_idx" in plan and found == 12


def test_a_small_import_keeps_the_fulltext_indexes(db, hash_settings, instance):
    oids = {name: db.execute("SELECT to_regclass(%s)::oid", (name,)).fetchone()[0]
            for name in FULLTEXT_INDEXES}
    stats = run(db, hash_settings, instance, _rows(3), rebuild_index=None)
    assert not stats.fulltext_rebuilt
    assert oids == {name: db.execute("SELECT to_regclass(%s)::oid", (name,)).fetchone()[0]
                    for name in FULLTEXT_INDEXES}


def test_fulltext_indexes_dropped_by_a_killed_import_are_rebuilt(db, hash_settings, instance):
    before = _fulltext_definitions(db)
    assert drop_fulltext_indexes(db, FULLTEXT_INDEXES) == list(FULLTEXT_INDEXES)
    assert not any(fulltext_index_exists(db, name) for name in FULLTEXT_INDEXES)
    # keyword search stays correct meanwhile (a scan instead of the index)
    run(db, hash_settings, instance, _rows(2), rebuild_index=False)
    assert db.execute("SELECT count(*) FROM agent_memory_chunks WHERE instance_key = %s"
                      " AND content_tsv @@ plainto_tsquery('german', 'Beleg')",
                      (instance,)).fetchone()[0] == 2
    # the next import (or an operator) puts them back
    drop_fulltext_indexes(db, FULLTEXT_INDEXES)
    assert repair_fulltext_indexes(db, hash_settings)
    assert _fulltext_definitions(db) == before
    assert not repair_fulltext_indexes(db, hash_settings)
    drop_fulltext_indexes(db, ["agent_memory_chunks_tsv_idx"])
    run(db, hash_settings, f"{instance}-2", _rows(1), rebuild_index=False)
    assert _fulltext_definitions(db) == before


def test_fulltext_indexes_another_import_loads_without_are_left_to_it(
        db, module_database_url, hash_settings, instance):
    with psycopg.connect(module_database_url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))",
                      ("memory-import-index:fulltext",))
        drop_fulltext_indexes(other, ["agent_memory_assertions_tsv_idx"])
        stats = run(db, hash_settings, instance, _rows(3), rebuild_index=True)
        assert not stats.fulltext_rebuilt
        assert not fulltext_index_exists(db, "agent_memory_assertions_tsv_idx")
        assert fulltext_index_exists(db, "agent_memory_chunks_tsv_idx")
        # Released explicitly: a closed connection's backend lets go of its session locks
        # only when it has exited, which a busy server does after the next statement here.
        other.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))",
                      ("memory-import-index:fulltext",))
    assert repair_fulltext_indexes(db, hash_settings)  # that import's lock is gone


# --- concurrent loaders ------------------------------------------------------------------------

@pytest.mark.parametrize("batch_size", [1, 3, 7])
def test_concurrent_loaders_end_in_the_state_of_a_single_loader(db, hash_settings, instance,
                                                                 batch_size):
    single = run(db, hash_settings, instance, LOADER_ROWS, batch_size=batch_size, loaders=1)
    many = run(db, hash_settings, f"{instance}-x", LOADER_ROWS, batch_size=batch_size,
               loaders=3)
    for field_ in ("rows", "accepted", "deduplicated", "chunks", "embedded",
                   "assertions_created", "assertions_activated", "evidence", "batches"):
        assert getattr(many, field_) == getattr(single, field_), field_
    assert single.deduplicated == 4 and single.accepted == len(LOADER_ROWS) - 4
    assert snapshot(db, f"{instance}-x") == snapshot(db, instance)
    # ... and a rerun deduplicates every row, whichever loader wrote it
    again = run(db, hash_settings, f"{instance}-x", LOADER_ROWS, batch_size=batch_size,
                loaders=3)
    assert (again.accepted, again.deduplicated) == (0, len(LOADER_ROWS))


def test_a_row_the_database_refuses_is_rejected_alone_with_concurrent_loaders(
        db, module_database_url, instance):
    settings = Settings(database_url=module_database_url, chunk_target_chars=3000,
                        _env_file=None)  # type: ignore[call-arg]
    rows = [{"content": f"Short fact {i}.", "visibility": "team", "user_id": "u",
             "source_type": "fact"} for i in range(6)]
    rows[4] = {"content": "Langer Satz über Belege. " * 100, "visibility": "team",
               "user_id": "u", "source_type": "fact"}
    stats = run(db, settings, instance, rows, batch_size=3, loaders=2)
    assert stats.accepted == 5 and stats.rows == 6
    [rejection] = stats.rejected
    assert rejection.line == 5 and rejection.code == "database_error"


def test_a_failure_during_a_concurrent_load_keeps_the_committed_batches(db, hash_settings,
                                                                        instance):
    def ctx_for_row(row):
        if row["content"].startswith("Beleg 13 "):
            raise RuntimeError("bug in the caller")
        return AccessContext(instance)

    with pytest.raises(RuntimeError, match="bug in the caller"):
        import_memories(db, hash_settings, ctx_for_row, _rows(20), embedder=EMBEDDER,
                        batch_size=4, rebuild_index=True, loaders=2)
    assert _index_states(db) == {"hnsw"}
    assert all(fulltext_index_exists(db, name) for name in FULLTEXT_INDEXES)
    assert row_counts(db, instance)["agent_memories"] == 12  # the batches before the failure


def test_a_growing_import_refreshes_the_planner_statistics(db, hash_settings, instance):
    def analyses() -> int:
        db.execute("SELECT pg_stat_clear_snapshot()")
        return db.execute("SELECT analyze_count + autoanalyze_count FROM pg_stat_user_tables"
                          " WHERE relname = 'agent_memories'").fetchone()[0]

    before = analyses()
    present = db.execute("SELECT count(*) FROM agent_memories").fetchone()[0]
    db.execute("ANALYZE agent_memories")
    run(db, hash_settings, instance, _rows(present + 5), batch_size=max(5, present // 3 + 1))
    assert analyses() >= before + 2  # ours above, and the import's once it doubled the table


# --- CLI ---------------------------------------------------------------------------------------


def test_cli_import_reports_progress_summary_and_rejected_lines(module_database_url, tmp_path,
                                                                 monkeypatch, instance):
    lines = [json.dumps({"content": f"CLI note {i}.", "visibility": "workspace"})
             for i in range(25)]
    lines[3] = "{not json"
    lines[7] = json.dumps({"content": "token: ghp_" + "a" * 36, "visibility": "workspace"})
    lines += [json.dumps({"content": "bad", "visibility": "workspace", "x": i}) for i in range(21)]
    source = Path(tmp_path / "memories.jsonl")
    source.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("MEMORY_DATABASE_URL", module_database_url)
    monkeypatch.setenv("MEMORY_HASH_EMBEDDING_DIMENSIONS", "32")
    from memory_platform.cli import main
    from memory_platform.foundation.settings import get_settings

    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(main, ["import", str(source), "--instance", instance,
                                           "--provider", "hash", "--batch-size", "10"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 1, result.output
    assert "rows/s" in result.stderr and "accepted" in result.stderr
    assert "46 rows" in result.stdout and "23 accepted" in result.stdout
    assert "23 rejected" in result.stdout
    assert "line 4: malformed JSON" in result.stdout
    assert "line 8: " in result.stdout and "GitHub token" in result.stdout
    assert "... and 3 more" in result.stdout


@pytest.fixture(autouse=True)
def _vector_types(db):
    register_vector(db)
