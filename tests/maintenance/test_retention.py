"""The retention sweep against the real database: old superseded/archived memories no live
assertion or active graph item references are deleted (chunks cascade) after an audit row
without their text; referenced, recent, active and Dream rows stay; graph evidence is capped
per item keeping the newest; summarised context messages go only when asked; a dry run
writes nothing; another instance and, with an audience, another partition are untouched."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from psycopg import sql

from memory_platform.features.maintenance import retention
from memory_platform.features.maintenance.retention import retention_sweep
from memory_platform.foundation.settings import Settings
from tests.db import rows

RETENTION_DAYS = Settings.model_fields["retention_days"].default
EVIDENCE_CAP = Settings.model_fields["retention_evidence_cap"].default
OLD = datetime.now(UTC) - timedelta(days=RETENTION_DAYS + 10)
RECENT = datetime.now(UTC) - timedelta(days=RETENTION_DAYS - 10)
SECRET = "Ada's door code is 4711."
TABLES = ("agent_memories", "agent_memory_chunks", "agent_knowledge_evidence",
          "agent_context_messages", "agent_context_summary_messages",
          "agent_memory_v2_cleanup_audit", "agent_memory_dreams")


def one(db, query, *params):
    return db.execute(query, params).fetchone()[0]


def exists(db, table, row_id) -> bool:
    return one(db, sql.SQL("SELECT count(*) FROM {} WHERE id = %s").format(
        sql.Identifier(table)), row_id) == 1


def checksum(db, instance) -> tuple:
    return tuple(db.execute(sql.SQL(
        "SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, '|'"
        " ORDER BY to_jsonb(t)::text), '')) FROM {} t WHERE instance_key = %s").format(
        sql.Identifier(table)), (instance,)).fetchone() for table in TABLES)


def old_memory(db, instance, state="superseded", *, at=OLD, archived=True, **overrides):
    """A superseded (or archived) memory holding SECRET, with two chunks."""
    memory = rows.memory(db, instance, memory_state=state, content=SECRET,
                         archived_at=at if archived else None, updated_at=at, **overrides)
    for index in range(2):
        rows.chunk(db, instance, memory_id=memory, chunk_index=index, content=SECRET)
    return memory


def world(db, instance):
    """Memories of the workspace audience acme of ``instance``, each named by why it should
    be deleted or kept."""
    m = {}
    m["old_superseded"] = old_memory(db, instance)
    m["old_archived_no_stamp"] = old_memory(db, instance, "archived", archived=False)
    m["recent_superseded"] = old_memory(db, instance, at=RECENT)
    m["old_active"] = old_memory(db, instance, "active", archived=False)
    # cited through its source envelope by an active assertion's evidence
    m["cited_by_active"] = old_memory(db, instance)
    live = rows.assertion(db, instance, status="active", review_state="policy_approved")
    rows.evidence(db, instance, assertion_id=live,
                  source_id=rows.source(db, instance, memory_id=m["cited_by_active"]))
    # cited only by a rejected assertion: nothing live holds it
    m["cited_by_rejected"] = old_memory(db, instance)
    dead = rows.assertion(db, instance, status="rejected", review_state="policy_rejected")
    rows.evidence(db, instance, assertion_id=dead,
                  source_id=rows.source(db, instance, memory_id=m["cited_by_rejected"]))
    # the (superseded) projection of a still active assertion
    told = rows.assertion(db, instance, status="active", review_state="policy_approved")
    m["projection_of_active"] = old_memory(db, instance, assertion_id=told)
    # graph evidence of an active claim keeps it; of a superseded claim it cascades
    m["graph_active"] = old_memory(db, instance)
    rows.knowledge_evidence(db, instance, evidence_kind="memory",
                            source_memory_id=m["graph_active"],
                            claim_id=rows.claim(db, instance))
    m["graph_superseded"] = old_memory(db, instance)
    m["graph_superseded_evidence"] = rows.knowledge_evidence(
        db, instance, evidence_kind="memory", source_memory_id=m["graph_superseded"],
        claim_id=rows.claim(db, instance, status="superseded"))
    # what a Dream wrote stays for audit
    m["dream_row"] = old_memory(db, instance, source_type="dream",
                                dream_id=rows.dream(db, instance))
    # another partition of the same instance
    m["private_old"] = old_memory(db, instance, visibility_scope="private",
                                  audience_key="alice")
    # use restarts the clock: recalled lately, or its assertion called helpful lately
    m["recalled_lately"] = old_memory(db, instance, last_retrieved_at=RECENT)
    m["recalled_long_ago"] = old_memory(db, instance, last_retrieved_at=OLD)
    helped = rows.assertion(db, instance, status="superseded", review_state="policy_approved")
    m["helpful_lately"] = old_memory(db, instance, assertion_id=helped)
    rows.feedback(db, instance, assertion_id=helped, event_type="helpful", created_at=RECENT)
    helped_once = rows.assertion(db, instance, status="superseded",
                                 review_state="policy_approved")
    m["helpful_long_ago"] = old_memory(db, instance, assertion_id=helped_once)
    rows.feedback(db, instance, assertion_id=helped_once, event_type="helpful", created_at=OLD)
    return m


DELETED = ("old_superseded", "old_archived_no_stamp", "cited_by_rejected",
           "graph_superseded", "private_old", "recalled_long_ago", "helpful_long_ago")
KEPT = ("recent_superseded", "old_active", "cited_by_active", "projection_of_active",
        "graph_active", "dream_row", "recalled_lately", "helpful_lately")


def test_deletes_only_old_unreferenced_rows_after_an_audit_without_content(db, settings,
                                                                           instance):
    m = world(db, instance)
    other = f"{instance}-other"
    elsewhere = old_memory(db, other)
    start = one(db, "SELECT coalesce(max(id), 0) FROM agent_memory_v2_cleanup_audit")
    before_other = checksum(db, other)

    result = retention_sweep(db, settings, instance_key=instance)

    for name in DELETED:
        assert not exists(db, "agent_memories", m[name]), name
    for name in KEPT:
        assert exists(db, "agent_memories", m[name]), name
    assert result.memories == len(DELETED)
    assert result.chunks == 2 * len(DELETED)
    assert one(db, "SELECT count(*) FROM agent_memory_chunks WHERE memory_id = ANY(%s)",
               [m[n] for n in DELETED]) == 0
    assert not exists(db, "agent_knowledge_evidence", m["graph_superseded_evidence"])
    # another instance untouched
    assert exists(db, "agent_memories", elsewhere)
    assert checksum(db, other) == before_other

    audits = db.execute(
        "SELECT instance_key, operation, target_table, target_id, before_image::text"
        "  FROM agent_memory_v2_cleanup_audit WHERE id > %s ORDER BY id", (start,)).fetchall()
    assert sorted(a[3] for a in audits) == sorted(str(m[n]) for n in DELETED)
    assert {a[:3] for a in audits} == {(instance, "retention_delete", "agent_memories")}
    for *_, image in audits:
        assert "door code" not in image and '"content"' not in image
        assert '"contentLength": 24' in image and '"chunks": 2' in image
    assert result.audit_rows == len(DELETED)
    assert result.summary()["agent_memories"] == len(DELETED)

    # a second sweep finds nothing more
    again = retention_sweep(db, settings, instance_key=instance)
    assert (again.memories, again.knowledge_evidence, again.audit_rows) == (0, 0, 0)


def test_dry_run_counts_the_same_and_writes_nothing(db, settings, instance):
    world(db, instance)
    before = checksum(db, instance)

    dry = retention_sweep(db, settings, instance_key=instance, dry_run=True)

    assert checksum(db, instance) == before
    assert (dry.dry_run, dry.memories, dry.chunks, dry.audit_rows) == (
        True, len(DELETED), 2 * len(DELETED), 0)
    real = retention_sweep(db, settings, instance_key=instance)
    assert (real.memories, real.chunks) == (dry.memories, dry.chunks)


def test_an_audience_bounds_the_sweep_to_its_partition(db, settings, instance):
    m = world(db, instance)

    result = retention_sweep(db, settings, instance_key=instance,
                             audience=("private", "alice"))

    assert result.memories == 1
    assert not exists(db, "agent_memories", m["private_old"])
    assert exists(db, "agent_memories", m["old_superseded"])
    with pytest.raises(ValueError):
        retention_sweep(db, settings, audience=("private", "alice"))
    with pytest.raises(ValueError):
        retention_sweep(db, settings, instance_key=instance, audience=("galaxy", "x"))


def test_evidence_is_capped_per_item_keeping_the_newest(db, settings, instance,
                                                       monkeypatch):
    monkeypatch.setattr(retention, "BATCH_ROWS", 4)  # several batches
    claim = rows.claim(db, instance)
    small = rows.claim(db, instance)
    now = datetime.now(UTC)
    ids = [rows.knowledge_evidence(db, instance, claim_id=claim,
                                   created_at=now - timedelta(hours=i))
           for i in range(EVIDENCE_CAP + 7)]  # ids[0] is the newest
    kept_small = [rows.knowledge_evidence(db, instance, claim_id=small) for _ in range(3)]
    other = f"{instance}-other"
    other_claim = rows.claim(db, other)
    for i in range(EVIDENCE_CAP + 2):
        rows.knowledge_evidence(db, other, claim_id=other_claim,
                                created_at=now - timedelta(hours=i))

    dry = retention_sweep(db, settings, instance_key=instance, dry_run=True)
    assert dry.knowledge_evidence == 7
    assert one(db, "SELECT count(*) FROM agent_knowledge_evidence WHERE claim_id = %s",
               claim) == EVIDENCE_CAP + 7

    result = retention_sweep(db, settings, instance_key=instance)

    assert result.knowledge_evidence == 7 and result.batches >= 2
    left = {r[0] for r in db.execute(
        "SELECT id FROM agent_knowledge_evidence WHERE claim_id = %s", (claim,))}
    assert left == set(ids[:EVIDENCE_CAP])
    assert all(exists(db, "agent_knowledge_evidence", e) for e in kept_small)
    assert one(db, "SELECT count(*) FROM agent_knowledge_evidence WHERE claim_id = %s",
               other_claim) == EVIDENCE_CAP + 2
    audited = {r[0] for r in db.execute(
        "SELECT target_id FROM agent_memory_v2_cleanup_audit WHERE instance_key = %s"
        " AND target_table = 'agent_knowledge_evidence'", (instance,))}
    assert audited == {str(e) for e in ids[EVIDENCE_CAP:]}


def test_context_pruning_is_off_by_default_and_spares_the_live_context(db, settings,
                                                                      instance):
    session = f"s-{uuid.uuid4().hex[:6]}"
    at = {"session_key": session}

    def message(seq, created=OLD, content=SECRET):
        return rows.context_message(db, instance, seq=seq, created_at=created,
                                    content=content, **at)

    summary = rows.context_summary(db, instance, **at)
    covered = message(1)
    live = message(2)
    recent = message(3, RECENT)
    covered_later = message(4)
    uncovered = message(5)
    for msg in (covered, live, recent, covered_later):
        rows.summary_message(db, instance, summary_id=summary, message_id=msg, **at)
    rows.context_item(db, instance, message_id=live, **at)
    # seq 5 is the session's newest message (uncovered); in a second session the only,
    # hence newest, message is covered and still stays
    other_session = f"s-{uuid.uuid4().hex[:6]}"
    other_summary = rows.context_summary(db, instance, session_key=other_session)
    last = rows.context_message(db, instance, seq=1, created_at=OLD, content=SECRET,
                                session_key=other_session)
    rows.summary_message(db, instance, summary_id=other_summary, message_id=last,
                         session_key=other_session)

    default = retention_sweep(db, settings, instance_key=instance)
    assert default.context_messages == 0
    assert one(db, "SELECT count(*) FROM agent_context_messages WHERE instance_key = %s",
               instance) == 6

    dry = retention_sweep(db, settings, instance_key=instance, prune_context=True,
                          dry_run=True)
    assert dry.context_messages == 2
    pruned = retention_sweep(db, settings, instance_key=instance, prune_context=True)

    assert pruned.context_messages == 2
    assert not exists(db, "agent_context_messages", covered)
    assert not exists(db, "agent_context_messages", covered_later)
    for kept in (live, recent, uncovered, last):
        assert exists(db, "agent_context_messages", kept)
    assert exists(db, "agent_context_summaries", summary)
    images = [r[0] for r in db.execute(
        "SELECT before_image::text FROM agent_memory_v2_cleanup_audit WHERE instance_key = %s"
        " AND target_table = 'agent_context_messages'", (instance,))]
    assert len(images) == 2 and not any("door code" in i for i in images)


def test_refuses_to_run_inside_a_transaction(db, settings, instance):
    with db.transaction(), pytest.raises(RuntimeError):
        retention_sweep(db, settings, instance_key=instance)
