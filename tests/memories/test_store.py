"""store_memory: dedup, the audience precedence, one transaction, the activation policy of
facts, and a write path that survives embedding outages and model switches."""

from __future__ import annotations

import uuid
from contextlib import contextmanager

import pytest
from psycopg.rows import dict_row

from memory_platform.features.memories.sharing import set_share_with_team
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval.memories import get_memory
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.errors import NotFound
from memory_platform.shared.access import AccessContext, AccessError
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider
from memory_platform.shared.ledger.assertions import record_decision
from tests.memories.support import OutageEmbedder, TinyLocalEmbedder, nothing_written
from tests.support.settings import hash_embedding_settings
from tests.support.tables import row_counts

FACT = "The VAT filing for Mandant Nord is due on the tenth of each month."


def _write(db, settings, ctx, content=FACT, **kwargs):
    embedder = kwargs.pop("embedder", None)
    return store_memory(db, settings, ctx, MemoryWrite(content, **kwargs), embedder=embedder)


def _memory(db, memory_id) -> dict:
    with db.cursor(row_factory=dict_row) as cur:
        return cur.execute("SELECT * FROM agent_memories WHERE id = %s", (memory_id,)).fetchone()


def _assertion(db, assertion_id) -> dict:
    with db.cursor(row_factory=dict_row) as cur:
        return cur.execute("SELECT * FROM agent_memory_assertions WHERE id = %s",
                           (assertion_id,)).fetchone()


def _memory_count(db, instance) -> int:
    return row_counts(db, instance)["agent_memories"]


@contextmanager
def _schema_change(db, do: str, undo: str):
    db.execute(do)
    try:
        yield
    finally:
        db.execute(undo)


# --- dedup -------------------------------------------------------------------------------


def test_same_content_modulo_case_and_whitespace_only_touches_updated_at(
        db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="ada")
    first = _write(db, hash_settings, ctx, subject_refs={"mandantId": "nord"})
    before = _memory(db, first.id)
    counts = row_counts(db, instance)

    again = _write(db, hash_settings, ctx,
                   "  the VAT filing for MANDANT Nord\n is due on the   tenth of each month. ",
                   subject_refs={"mandantId": "nord"})

    after = _memory(db, first.id)
    assert again.deduplicated and again.id == first.id
    assert row_counts(db, instance) == counts
    assert after["updated_at"] > before["updated_at"]
    assert after["created_at"] == before["created_at"]
    assert after["content"] == FACT


def test_subject_refs_in_another_key_order_are_the_same_subject(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="ada")
    first = _write(db, hash_settings, ctx, subject_refs={"mandantId": "nord", "taskId": "t1"})
    again = _write(db, hash_settings, ctx, subject_refs={"taskId": "t1", "mandantId": "nord"})
    assert again.deduplicated and again.id == first.id


def test_different_subject_refs_create_a_new_row(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="ada")
    first = _write(db, hash_settings, ctx, subject_refs={"mandantId": "nord"})
    other = _write(db, hash_settings, ctx, subject_refs={"mandantId": "sued"})
    assert not other.deduplicated and other.id != first.id
    assert _memory_count(db, instance) == 2


def test_the_same_content_in_another_audience_creates_a_new_row(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="ada")
    private = _write(db, hash_settings, ctx)
    team = _write(db, hash_settings, ctx, visibility="team")
    assert not team.deduplicated and team.id != private.id
    assert (private.audience.kind, team.audience.kind) == ("private", "team")


def test_a_repeat_after_the_dedup_window_creates_a_new_row(db, module_database_url, instance):
    no_window = hash_embedding_settings(module_database_url, memory_dedup_window_hours=0)
    ctx = AccessContext(instance, user_id="ada")
    first = _write(db, no_window, ctx)
    again = _write(db, no_window, ctx)
    assert not again.deduplicated and again.id != first.id


def test_a_repeat_of_a_row_last_touched_before_the_window_creates_a_new_row(
        db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="ada")
    first = _write(db, hash_settings, ctx)
    with db.transaction():
        db.execute("SET LOCAL session_replication_role = replica")  # skip the touch trigger
        db.execute("UPDATE agent_memories SET updated_at = now() - interval '721 hours'"
                   " WHERE id = %s", (first.id,))
    again = _write(db, hash_settings, ctx)
    assert not again.deduplicated and again.id != first.id


# --- audience precedence -----------------------------------------------------------------


def test_agent_personal_memory_stays_private_even_for_a_sharing_user_asking_for_team(
        db, hash_settings, instance):
    set_share_with_team(db, instance, "ada", True)
    ctx = AccessContext(instance, user_id="ada", channel_thread_key="slack:C1")
    stored = _write(db, hash_settings, ctx, agent_personal=True, visibility="team")
    assert stored.audience.as_dict() == {"kind": "private", "key": "ada"}


def test_an_explicit_private_request_stays_private_for_a_sharing_user(
        db, hash_settings, instance):
    set_share_with_team(db, instance, "ada", True)
    stored = _write(db, hash_settings, AccessContext(instance, user_id="ada"),
                    explicit_private=True)
    assert stored.audience.kind == "private"


@pytest.mark.parametrize(
    ("requested", "context", "expected_key"),
    [("team", {"user_id": "ada"}, "instance"),
     ("workspace", {"user_id": "ada"}, "instance"),
     ("channel", {"user_id": "ada", "channel_thread_key": "slack:C1"}, "slack:C1")],
)
def test_an_explicit_visibility_is_honoured(db, hash_settings, instance, requested, context,
                                            expected_key):
    stored = _write(db, hash_settings, AccessContext(instance, **context), visibility=requested)
    row = _memory(db, stored.id)
    key = instance if expected_key == "instance" else expected_key
    assert (row["visibility_scope"], row["audience_key"]) == (requested, key)


def test_a_direct_user_without_a_preference_row_writes_private(db, hash_settings, instance):
    stored = _write(db, hash_settings, AccessContext(instance, user_id="ada"))
    row = _memory(db, stored.id)
    assert (row["visibility_scope"], row["audience_key"], row["user_id"]) == (
        "private", "ada", "ada")


def test_a_user_sharing_with_the_team_writes_team_and_keeps_the_user_id(
        db, hash_settings, instance):
    set_share_with_team(db, instance, "ada", True)
    stored = _write(db, hash_settings, AccessContext(instance, user_id="ada"))
    row = _memory(db, stored.id)
    assert (row["visibility_scope"], row["audience_key"]) == ("team", instance)
    assert row["subject_refs"]["userId"] == "ada"
    assert _assertion(db, stored.assertion_id)["subject_refs"]["userId"] == "ada"


def test_a_user_who_opted_out_writes_private(db, hash_settings, instance):
    set_share_with_team(db, instance, "ada", False)
    stored = _write(db, hash_settings, AccessContext(instance, user_id="ada"))
    assert stored.audience.kind == "private"


def test_an_unreadable_preference_fails_closed_to_private_and_the_write_succeeds(
        db, hash_settings, instance):
    set_share_with_team(db, instance, "ada", True)
    with _schema_change(
            db, "ALTER TABLE agent_user_preferences RENAME TO agent_user_preferences_gone",
            "ALTER TABLE agent_user_preferences_gone RENAME TO agent_user_preferences"):
        stored = _write(db, hash_settings, AccessContext(instance, user_id="ada"))
    assert stored.audience.kind == "private"
    assert _memory(db, stored.id)["visibility_scope"] == "private"


def test_a_linked_channel_session_writes_team(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="ada", channel_thread_key="slack:C1",
                        channel_type="slack")
    stored = _write(db, hash_settings, ctx)
    row = _memory(db, stored.id)
    assert (row["visibility_scope"], row["audience_key"]) == ("team", instance)
    assert row["subject_refs"] == {"userId": "ada"}  # the thread key stays in the channel


def test_an_unlinked_channel_session_writes_channel(db, hash_settings, instance):
    ctx = AccessContext(instance, channel_thread_key="telegram:42", channel_type="telegram")
    stored = _write(db, hash_settings, ctx)
    row = _memory(db, stored.id)
    assert (row["visibility_scope"], row["audience_key"]) == ("channel", "telegram:42")


def test_a_user_less_group_room_writes_team(db, hash_settings, instance):
    stored = _write(db, hash_settings, AccessContext(instance, group_room_id="room-7"))
    assert stored.audience.as_dict() == {"kind": "team", "key": instance}


def test_a_session_without_identity_writes_workspace(db, hash_settings, instance):
    stored = _write(db, hash_settings, AccessContext(instance, session_key="cron:nightly"),
                    source_type="manual")
    row = _memory(db, stored.id)
    assert (row["visibility_scope"], row["audience_key"], row["memory_scope"]) == (
        "workspace", instance, "workspace")


def test_existing_rows_do_not_move_when_the_preference_changes(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="ada")
    set_share_with_team(db, instance, "ada", False)
    private = _write(db, hash_settings, ctx, "Ada prefers invoices as PDF.")
    set_share_with_team(db, instance, "ada", True)
    team = _write(db, hash_settings, ctx, "Ada reviews the payroll on Fridays.")
    set_share_with_team(db, instance, "ada", False)

    assert _memory(db, private.id)["visibility_scope"] == "private"
    assert _memory(db, team.id)["visibility_scope"] == "team"
    assert _assertion(db, private.assertion_id)["audience_kind"] == "private"
    assert _assertion(db, team.assertion_id)["audience_kind"] == "team"


def test_a_private_write_without_a_user_is_refused_and_nothing_is_written(
        db, hash_settings, instance):
    with pytest.raises(AccessError):
        _write(db, hash_settings, AccessContext(instance, group_room_id="room-7"),
               explicit_private=True)
    assert nothing_written(db, instance)


def test_a_team_write_without_team_access_is_refused_and_nothing_is_written(
        db, hash_settings, instance):
    with pytest.raises(AccessError):
        _write(db, hash_settings, AccessContext(instance), visibility="team")
    assert nothing_written(db, instance)


# --- one transaction ---------------------------------------------------------------------


def test_a_failure_in_the_middle_of_the_write_leaves_no_row_behind(db, hash_settings, instance):
    function = f"fail_chunks_{uuid.uuid4().hex[:8]}"
    create = f"""
        CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.instance_key = '{instance}' THEN
                RAISE EXCEPTION 'chunk insert fails on purpose';
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER {function} BEFORE INSERT ON agent_memory_chunks
            FOR EACH ROW EXECUTE FUNCTION {function}();
    """
    drop = f"DROP TRIGGER {function} ON agent_memory_chunks; DROP FUNCTION {function}();"
    with _schema_change(db, create, drop):
        with pytest.raises(Exception, match="chunk insert fails on purpose"):
            _write(db, hash_settings, AccessContext(instance, user_id="ada"))
    assert row_counts(db, instance) == dict.fromkeys(row_counts(db, instance), 0)


# --- facts become assertions under the activation policy ---------------------------------


@pytest.mark.parametrize("visibility", ["private", "team"])
def test_an_explicit_human_fact_in_a_safe_audience_is_active_with_verbatim_evidence(
        db, hash_settings, instance, visibility):
    stored = _write(db, hash_settings, AccessContext(instance, user_id="ada"),
                    visibility=visibility)
    assertion = _assertion(db, stored.assertion_id)
    assert (assertion["status"], assertion["review_state"]) == ("active", "policy_approved")
    assert (assertion["audience_kind"], assertion["assertion_text"]) == (visibility, FACT)

    reviews = db.execute(
        "SELECT decision, reviewer_kind FROM agent_memory_assertion_reviews"
        " WHERE assertion_id = %s", (stored.assertion_id,)).fetchall()
    assert reviews == [("activate", "policy")]

    evidence = db.execute(
        """
        SELECT e.excerpt, s.content, s.id = m.source_id, s.audience_kind, s.audience_key
          FROM agent_memory_assertion_evidence e
          JOIN agent_memory_sources s ON s.id = e.source_id
          JOIN agent_memories m ON m.id = %s
         WHERE e.assertion_id = %s
        """, (stored.id, stored.assertion_id)).fetchall()
    assert len(evidence) == 1
    excerpt, source_text, own_source, kind, key = evidence[0]
    assert excerpt in source_text and own_source
    assert (kind, key) == (assertion["audience_kind"], assertion["audience_key"])


def test_an_active_fact_gets_its_assertion_vector(db, hash_settings, instance):
    stored = _write(db, hash_settings, AccessContext(instance, user_id="ada"))
    rows = db.execute("SELECT embedding_key FROM agent_memory_assertion_embeddings"
                      " WHERE assertion_id = %s", (stored.assertion_id,)).fetchall()
    assert rows == [("hash:feature-hash-v1:1536:v1",)]


@pytest.mark.parametrize(
    "write",
    [{"visibility": "workspace"},
     {"trust_class": "assistant_inference"},
     {"assertion_type": "procedure"}],
    ids=["workspace", "assistant-inference", "procedure"],
)
def test_a_fact_needing_review_stays_pending_and_is_not_recalled(
        db, hash_settings, instance, write):
    ctx = AccessContext(instance, user_id="ada")
    stored = _write(db, hash_settings, ctx, **write)
    assertion = _assertion(db, stored.assertion_id)
    assert (assertion["status"], assertion["review_state"]) == ("candidate", "pending")
    assert search_memories(db, hash_settings, ctx, "VAT filing Mandant Nord tenth") == []
    with pytest.raises(NotFound):
        get_memory(db, ctx, stored.id)


def test_a_direct_human_fact_restating_a_pending_inference_is_recalled(
        db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="ada")
    text = "Ada prefers dark mode in the editor."
    inferred = _write(db, hash_settings, ctx, text, trust_class="assistant_inference")
    assert inferred.assertion_status == "candidate"
    stated = _write(db, hash_settings, ctx, text, subject_refs={"moduleSlug": "editor"})
    assert not stated.deduplicated
    assert get_memory(db, ctx, stated.id).content == text


def test_a_human_rejected_fact_stays_rejected_when_restated(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="ada")
    text = "Ada prefers light mode in the editor."
    first = _write(db, hash_settings, ctx, text)
    record_decision(db, instance_key=instance, assertion_id=first.assertion_id,
                    decision="reject", reviewer_kind="human", reason_code="wrong")
    again = _write(db, hash_settings, ctx, text, subject_refs={"moduleSlug": "editor"})
    assert _assertion(db, again.assertion_id)["review_state"] == "human_rejected"
    with pytest.raises(NotFound):
        get_memory(db, ctx, again.id)


@pytest.mark.parametrize("source_type", ["flush", "summary"])
def test_flush_and_summary_rows_get_no_assertion(db, hash_settings, instance, source_type):
    ctx = AccessContext(instance, user_id="ada", session_key="web:s1")
    stored = _write(db, hash_settings, ctx, source_type=source_type, memory_class="episodic")
    assert stored.assertion_id is None
    assert row_counts(db, instance)["agent_memory_assertions"] == 0
    assert get_memory(db, ctx, stored.id).memory_scope == "session"


# --- embeddings: outages and generations -------------------------------------------------


def test_chunks_record_their_embedding_provenance(db, hash_settings, instance):
    stored = _write(db, hash_settings, AccessContext(instance, user_id="ada"))
    rows = db.execute("SELECT embedding_key, metadata -> 'embedding' FROM agent_memory_chunks"
                      " WHERE memory_id = %s", (stored.id,)).fetchall()
    key = "hash:feature-hash-v1:1536:v1"
    assert rows == [(key, {"key": key, "strategy": "hash", "model": "feature-hash-v1"})]


def test_an_embedding_outage_keeps_the_write_keyword_reachable(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="ada")
    _write(db, hash_settings, ctx, "Lunch is served at noon in the cafeteria.")  # hash active
    stored = _write(db, hash_settings, ctx, embedder=OutageEmbedder())

    assert not stored.embedded and stored.assertion_status == "active"
    chunks = db.execute("SELECT embedding IS NULL, generation_id IS NULL, embedding_key"
                        " FROM agent_memory_chunks WHERE memory_id = %s", (stored.id,)).fetchall()
    assert chunks == [(True, True, None)]
    hits = {h.memory_id: h for h in search_memories(db, hash_settings, ctx,
                                                     "When is the VAT filing for Nord due?")}
    assert stored.id in hits and hits[stored.id].vector_score is None
    assert hits[stored.id].keyword_score > 0


@pytest.mark.parametrize("other", [TinyLocalEmbedder(), HashEmbeddingProvider(384)],
                         ids=["local-model", "hash-384"])
def test_a_query_of_another_generation_never_scores_stored_vectors(
        db, hash_settings, instance, other):
    ctx = AccessContext(instance, user_id="ada")
    stored = _write(db, hash_settings, ctx)  # hash, 1536 dimensions
    hits = search_memories(db, hash_settings, ctx, "VAT filing for Nord", embedder=other)
    assert [(h.memory_id, h.vector_score) for h in hits] == [(stored.id, None)]
    assert hits[0].keyword_score > 0


@pytest.mark.parametrize("other", [TinyLocalEmbedder(), HashEmbeddingProvider(384)],
                         ids=["local-model", "hash-384"])
def test_after_a_model_switch_old_vectors_are_never_compared(db, hash_settings, instance,
                                                             other):
    ctx = AccessContext(instance, user_id="ada")
    old = _write(db, hash_settings, ctx, "The VAT filing for Mandant Nord is due monthly.")
    new = _write(db, hash_settings, ctx, "The VAT filing for Mandant Sued is due quarterly.",
                 embedder=other)
    assert new.embedded

    hits = {h.memory_id: h for h in search_memories(db, hash_settings, ctx,
                                                    "VAT filing due", embedder=other)}
    assert set(hits) == {old.id, new.id}
    assert hits[old.id].vector_score is None
    assert hits[new.id].vector_score is not None and hits[new.id].vector_score > 0


def test_f15_the_provider_is_called_with_no_transaction_open(module_database_url,
                                                              hash_settings, instance):
    """F15: on a pool-like connection (not autocommit) whose caller has already read (as the
    API's context resolution does), the provider runs while the session is idle: no
    transaction, no row or advisory lock, held across the network call."""
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg.pq import TransactionStatus

    seen: list[TransactionStatus] = []

    with psycopg.connect(module_database_url) as pooled:
        register_vector(pooled)

        class Watching(HashEmbeddingProvider):
            def embed_documents(self, texts):
                seen.append(pooled.info.transaction_status)
                return super().embed_documents(texts)

        pooled.execute("SELECT 1")  # the caller's own read leaves a transaction open
        stored = store_memory(pooled, hash_settings, AccessContext(instance, user_id="ada"),
                              MemoryWrite("The F15 provider sees an idle session."),
                              embedder=Watching(hash_settings.hash_embedding_dimensions))
        pooled.commit()

    assert seen == [TransactionStatus.IDLE] and stored.embedded
