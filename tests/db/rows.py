"""Row factories for schema tests: one function per table, each inserting a minimal valid row
into the given instance and returning its id (its primary key where the table has no id).

Keyword overrides replace column values. Required links that are not overridden get a fresh
parent row in the same instance, so ``evidence(conn, "a", source_id=source(conn, "b"))`` is
a complete row in instance ``a`` that cites a source of instance ``b``. Where one column
decides another (a finished dream has ``finished_at``, a resolved conflict a resolution),
the factory derives the dependent column, so every listed value of an enumerated column
yields a valid row.

Audiences: a row with an audience (kind and key; ``visibility_scope`` is the kind in the
projection and graph tables) defaults to workspace ``acme``. A private audience is keyed by
its owner, so ``audience_kind="private"`` defaults the key to ``alice`` and
``audience_key="bob"`` in a private audience makes ``bob`` the owner. Parents created on a
row's behalf live in the row's audience, so ``evidence(conn, "a", audience_kind="team")``
cites a team source for a team assertion.
"""

from __future__ import annotations

import hashlib
import itertools
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

Conn = psycopg.Connection[Any]
Factory = Callable[..., Any]

AUDIENCE_KINDS = ("private", "team", "workspace", "channel")
AUDIENCE_KIND = "workspace"
AUDIENCE_KEY = "acme"
OWNER = "alice"  # and the key of the default private audience
CHANNEL_THREAD = "C42/1700000000.0001"
SESSION_KEY = "session-1"
SOURCE_CONTENT = "Alice prefers green tea over coffee in the morning."
EXCERPT = "prefers green tea"  # occurs verbatim in SOURCE_CONTENT
DIMENSIONS = 3
VECTOR = "[0.1,0.2,0.3]"  # DIMENSIONS values

_counter = itertools.count()  # chunk indexes, message seqs, context positions


def _insert(conn: Conn, table: str, row: dict[str, Any]) -> dict[str, Any]:
    statement = sql.SQL("INSERT INTO {} ({}) VALUES ({}) RETURNING *").format(
        sql.Identifier(table),
        sql.SQL(", ").join(map(sql.Identifier, row)),
        sql.SQL(", ").join(sql.Placeholder() * len(row)),
    )
    with conn.cursor(row_factory=dict_row) as cur:
        inserted = cur.execute(statement, list(row.values())).fetchone()
    assert inserted is not None
    return inserted


def _link(row: dict[str, Any], column: str, make: Callable[[], Any]) -> None:
    """Create the parent row for ``column`` unless the caller supplied one."""
    if column not in row:
        row[column] = make()


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def _audience(overrides: dict[str, Any], kind_column: str = "audience_kind") -> tuple[str, str]:
    """The (kind, key) a row will have: the given one, else the default; a private audience
    is keyed by its owner."""
    kind = overrides.get(kind_column, AUDIENCE_KIND)
    return kind, overrides.get("audience_key", OWNER if kind == "private" else AUDIENCE_KEY)


def _owner(audience: tuple[str, str]) -> str:
    """The owner of a row in ``audience``: the key of a private audience, else alice."""
    kind, key = audience
    return key if kind == "private" else OWNER


def _in(audience: tuple[str, str], kind_column: str = "audience_kind") -> dict[str, str]:
    """Audience columns for a parent created on a row's behalf: the row's own audience. A
    row of an unknown kind gets its parents in the default audience, so that the row's own
    CHECK, not its parent's, rejects the kind."""
    kind, key = audience if audience[0] in AUDIENCE_KINDS else (AUDIENCE_KIND, AUDIENCE_KEY)
    return {kind_column: kind, "audience_key": key}


# --- ledger (0003) ----------------------------------------------------------------------


def generation(conn: Conn, instance: str, **overrides: Any) -> int:
    # 'building', not 'active': an instance may have only one active generation.
    row = {"instance_key": instance, "provider": "hash", "model": "hash-3",
           "dimensions": DIMENSIONS, "generation_key": f"hash:{uuid.uuid4().hex[:12]}",
           "status": "building"} | overrides
    return _insert(conn, "agent_memory_embedding_generations", row)["id"]


def source(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    kind, key = audience = _audience(overrides)
    row = {"instance_key": instance, "audience_kind": kind, "audience_key": key,
           "owner_user_id": _owner(audience), "source_key": f"manual:{uuid.uuid4()}",
           "source_kind": "manual", "trust_class": "human_direct", "content": SOURCE_CONTENT,
           "content_hash": _hash(SOURCE_CONTENT)} | overrides
    return _insert(conn, "agent_memory_sources", row)["id"]


def assertion(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    kind, key = audience = _audience(overrides)
    row = {"instance_key": instance, "audience_kind": kind, "audience_key": key,
           "owner_user_id": _owner(audience), "identity_hash": uuid.uuid4().hex,
           "assertion_type": "preference", "assertion_text": "Alice prefers green tea.",
           "origin": "explicit"} | overrides
    return _insert(conn, "agent_memory_assertions", row)["id"]


def evidence(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    kind, key = audience = _audience(overrides)
    row = {"instance_key": instance, "audience_kind": kind, "audience_key": key,
           "excerpt": EXCERPT} | overrides
    _link(row, "assertion_id", lambda: assertion(conn, instance, **_in(audience)))
    _link(row, "source_id", lambda: source(conn, instance, **_in(audience)))
    return _insert(conn, "agent_memory_assertion_evidence", row)["id"]


def review(conn: Conn, instance: str, **overrides: Any) -> int:
    row = {"instance_key": instance, "decision": "approve", "reviewer_kind": "policy",
           "reason_code": "policy_default"} | overrides
    _link(row, "assertion_id", lambda: assertion(conn, instance))
    return _insert(conn, "agent_memory_assertion_reviews", row)["id"]


def conflict(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    # (status = 'resolved') = (resolution IS NOT NULL)
    status = overrides.get("status", "resolved" if overrides.get("resolution") else "open")
    kind, key = audience = _audience(overrides)
    row = {"instance_key": instance, "audience_kind": kind, "audience_key": key,
           "detected_by": "write_path", "status": status,
           "resolution": "kept_both" if status == "resolved" else None} | overrides
    _link(row, "assertion_id", lambda: assertion(conn, instance, **_in(audience)))
    _link(row, "conflicting_assertion_id", lambda: assertion(conn, instance, **_in(audience)))
    return _insert(conn, "agent_memory_assertion_conflicts", row)["id"]


def assertion_embedding(conn: Conn, instance: str, **overrides: Any) -> tuple[uuid.UUID, int]:
    row = {"instance_key": instance, "embedding": VECTOR, "content_hash": "h"} | overrides
    _link(row, "assertion_id", lambda: assertion(conn, instance))
    _link_generation(conn, instance, row)
    inserted = _insert(conn, "agent_memory_assertion_embeddings", row)
    return inserted["assertion_id"], inserted["generation_id"]


def feedback(conn: Conn, instance: str, **overrides: Any) -> int:
    row = {"instance_key": instance, "event_type": "retrieved"} | overrides
    _link(row, "assertion_id", lambda: assertion(conn, instance))
    return _insert(conn, "agent_memory_retrieval_feedback", row)["id"]


def outbox_job(conn: Conn, instance: str, **overrides: Any) -> int:
    row = {"instance_key": instance, "job_type": "assertion_projection",
           "subject_id": uuid.uuid4(), "idempotency_key": f"job:{uuid.uuid4()}"} | overrides
    return _insert(conn, "agent_memory_ingestion_outbox", row)["id"]


def _link_generation(conn: Conn, instance: str, row: dict[str, Any]) -> None:
    """An embedding names its generation twice: by id and by generation_key."""
    if "generation_id" not in row:
        key = f"hash:{uuid.uuid4().hex[:12]}"
        row["generation_id"] = generation(conn, instance, generation_key=key)
        row["embedding_key"] = key


# --- retrieval projections (0004) -------------------------------------------------------


def memory(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    # A channel memory needs its thread (or room), a session memory its session; a private
    # memory is its user's (user_id = audience_key).
    kind, key = audience = _audience(overrides, "visibility_scope")
    memory_scope = overrides.get("memory_scope", "workspace")
    row = {"instance_key": instance, "memory_scope": memory_scope, "visibility_scope": kind,
           "audience_key": key, "user_id": _owner(audience), "source_type": "manual",
           "content": "Alice prefers green tea.", "content_hash": _hash("alice tea"),
           "channel_thread_key": CHANNEL_THREAD if kind == "channel" else None,
           "session_key": SESSION_KEY if memory_scope == "session" else None,
           } | overrides
    return _insert(conn, "agent_memories", row)["id"]


def chunk(conn: Conn, instance: str, **overrides: Any) -> int:
    row = {"instance_key": instance, "chunk_index": next(_counter),
           "content": "Alice prefers green tea."} | overrides
    _link(row, "memory_id", lambda: memory(conn, instance))
    return _insert(conn, "agent_memory_chunks", row)["id"]


def relation(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    row = {"instance_key": instance, "relation_type": "derives"} | overrides
    _link(row, "from_memory_id", lambda: memory(conn, instance))
    _link(row, "to_memory_id", lambda: memory(conn, instance))
    return _insert(conn, "agent_memory_relations", row)["id"]


# --- dreaming (0005) --------------------------------------------------------------------


def dream(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    # (status = 'running') = (finished_at IS NULL)
    status = overrides.get("status", "running")
    kind, key = _audience(overrides)
    row = {"instance_key": instance, "audience_kind": kind, "audience_key": key,
           "partition_key": f"{instance}/{kind}/{key}", "status": status,
           "finished_at": None if status == "running" else _now()} | overrides
    return _insert(conn, "agent_memory_dreams", row)["id"]


def wiki_proposal(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    # A published proposal has published_at.
    state = overrides.get("state", "draft")
    kind, key = _audience(overrides)
    row = {"instance_key": instance, "audience_kind": kind, "audience_key": key, "state": state,
           "page_slug": "people/alice", "title": "Alice",
           "body_markdown": "Prefers green tea.",
           "published_at": _now() if state == "published" else None} | overrides
    return _insert(conn, "wiki_change_proposals", row)["id"]


def cleanup_audit(conn: Conn, instance: str, **overrides: Any) -> int:
    row = {"instance_key": instance, "operation": "entity_merge",
           "target_table": "agent_knowledge_entities", "target_id": str(uuid.uuid4())} | overrides
    return _insert(conn, "agent_memory_v2_cleanup_audit", row)["id"]


# --- knowledge graph (0006) -------------------------------------------------------------


def entity(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    # An active unlinked entity is unique per (audience, type, normalised label) (0018): each
    # default row gets a label of its own, so one test can make several.
    kind, key = _audience(overrides, "visibility_scope")
    n = next(_counter)
    row = {"instance_key": instance, "entity_type": "person", "label": f"Alice {n}",
           "normalized_label": f"alice {n}", "visibility_scope": kind,
           "audience_key": key} | overrides
    return _insert(conn, "agent_knowledge_entities", row)["id"]


def claim(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    kind, key = audience = _audience(overrides, "visibility_scope")
    row = {"instance_key": instance, "predicate": "prefers", "object_value": "green tea",
           "assertion_text": "Alice prefers green tea.", "visibility_scope": kind,
           "audience_key": key} | overrides
    _link(row, "subject_entity_id",
          lambda: entity(conn, instance, **_in(audience, "visibility_scope")))
    return _insert(conn, "agent_knowledge_claims", row)["id"]


def edge(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    kind, key = audience = _audience(overrides, "visibility_scope")
    row = {"instance_key": instance, "relation_type": "works_with",
           "visibility_scope": kind, "audience_key": key} | overrides
    _link(row, "source_entity_id",
          lambda: entity(conn, instance, **_in(audience, "visibility_scope")))
    _link(row, "target_entity_id",
          lambda: entity(conn, instance, **_in(audience, "visibility_scope")))
    return _insert(conn, "agent_knowledge_edges", row)["id"]


def knowledge_evidence(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    # Backs exactly one of entity/claim/edge (an entity unless told otherwise) with the
    # provenance its evidence_kind names: a dream (also for an unknown kind, so that only the
    # kind is wrong), a memory or an assertion.
    row = {"instance_key": instance, "evidence_kind": "dream"} | overrides
    if not {"entity_id", "claim_id", "edge_id"} & row.keys():
        row["entity_id"] = entity(conn, instance)
    column, make = EVIDENCE_PROVENANCE.get(row["evidence_kind"], EVIDENCE_PROVENANCE["dream"])
    _link(row, column, lambda: make(conn, instance))
    return _insert(conn, "agent_knowledge_evidence", row)["id"]


EVIDENCE_PROVENANCE: dict[str, tuple[str, Factory]] = {
    "dream": ("dream_id", dream),
    "memory": ("source_memory_id", memory),
    "assertion": ("assertion_id", assertion),
}
"""evidence_kind -> the column it requires and the factory of its target."""


def entity_embedding(conn: Conn, instance: str, **overrides: Any) -> tuple[uuid.UUID, int]:
    row = {"instance_key": instance, "embedding": VECTOR, "content_hash": "h"} | overrides
    _link(row, "entity_id", lambda: entity(conn, instance))
    _link_generation(conn, instance, row)
    inserted = _insert(conn, "agent_knowledge_entity_embeddings", row)
    return inserted["entity_id"], inserted["generation_id"]


def claim_embedding(conn: Conn, instance: str, **overrides: Any) -> tuple[uuid.UUID, int]:
    row = {"instance_key": instance, "embedding": VECTOR, "content_hash": "h"} | overrides
    _link(row, "claim_id", lambda: claim(conn, instance))
    _link_generation(conn, instance, row)
    inserted = _insert(conn, "agent_knowledge_claim_embeddings", row)
    return inserted["claim_id"], inserted["generation_id"]


# --- lossless context (0007) ------------------------------------------------------------


def context_message(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    row = {"instance_key": instance, "session_key": SESSION_KEY, "seq": next(_counter),
           "role": "user", "content": "Which tea do I like?"} | overrides
    return _insert(conn, "agent_context_messages", row)["id"]


def context_summary(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    # (kind = 'leaf') = (depth = 0)
    kind = overrides.get("kind", "leaf")
    row = {"instance_key": instance, "session_key": SESSION_KEY, "kind": kind,
           "depth": 0 if kind == "leaf" else 1, "content": "Alice asked about tea."} | overrides
    return _insert(conn, "agent_context_summaries", row)["id"]


def summary_message(conn: Conn, instance: str, **overrides: Any) -> tuple[uuid.UUID, uuid.UUID]:
    row = {"instance_key": instance, "session_key": SESSION_KEY} | overrides
    _link(row, "summary_id", lambda: context_summary(conn, instance))
    _link(row, "message_id", lambda: context_message(conn, instance))
    inserted = _insert(conn, "agent_context_summary_messages", row)
    return inserted["summary_id"], inserted["message_id"]


def summary_parent(conn: Conn, instance: str, **overrides: Any) -> tuple[uuid.UUID, uuid.UUID]:
    row = {"instance_key": instance, "session_key": SESSION_KEY} | overrides
    _link(row, "parent_summary_id", lambda: context_summary(conn, instance, kind="condensed"))
    _link(row, "child_summary_id", lambda: context_summary(conn, instance))
    inserted = _insert(conn, "agent_context_summary_parents", row)
    return inserted["parent_summary_id"], inserted["child_summary_id"]


def context_item(conn: Conn, instance: str, **overrides: Any) -> tuple[str, str, int]:
    # The item kind follows the link given (a message unless a summary_id is passed).
    kind = overrides.get("item_kind", "summary" if "summary_id" in overrides else "message")
    row = {"instance_key": instance, "session_key": SESSION_KEY, "position": next(_counter),
           "item_kind": kind} | overrides
    if kind == "message":
        _link(row, "message_id", lambda: context_message(conn, instance))
    if kind == "summary":
        _link(row, "summary_id", lambda: context_summary(conn, instance))
    inserted = _insert(conn, "agent_context_items", row)
    return inserted["instance_key"], inserted["session_key"], inserted["position"]


# --- platform (0002) --------------------------------------------------------------------


def api_key(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    row = {"instance_key": instance, "user_id": OWNER,
           "token_prefix": f"mpk_{uuid.uuid4().hex[:12]}",
           "token_hash": _hash(uuid.uuid4().hex), "scopes": ["memory:read"]} | overrides
    return _insert(conn, "api_keys", row)["id"]


def inspector_session(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    row = {"instance_key": instance, "secret_hash": _hash(uuid.uuid4().hex),
           "expires_at": _now() + timedelta(hours=1)} | overrides
    if "key_id" not in row:
        row["key_id"] = api_key(conn, instance)
    return _insert(conn, "inspector_sessions", row)["id"]


# --- trust model (0013) ------------------------------------------------------------------


def channel_member(conn: Conn, instance: str, **overrides: Any) -> tuple[str, str, str]:
    row = {"instance_key": instance, "channel_key": f"slack:{uuid.uuid4().hex[:8]}",
           "user_id": OWNER} | overrides
    inserted = _insert(conn, "agent_channel_members", row)
    return inserted["instance_key"], inserted["channel_key"], inserted["user_id"]


def session_participant(conn: Conn, instance: str, **overrides: Any) -> tuple[str, str, str]:
    # A fresh session each time: a session has at most one owner.
    row = {"instance_key": instance, "session_key": f"web:{uuid.uuid4().hex[:8]}",
           "user_id": OWNER, "role": "owner"} | overrides
    inserted = _insert(conn, "agent_session_participants", row)
    return inserted["instance_key"], inserted["session_key"], inserted["user_id"]


def feedback_run(conn: Conn, instance: str, **overrides: Any) -> tuple[str, str]:
    row = {"instance_key": instance, "run_id": f"run-{uuid.uuid4().hex[:8]}",
           "user_id": OWNER, "session_key": SESSION_KEY} | overrides
    inserted = _insert(conn, "agent_feedback_runs", row)
    return inserted["instance_key"], inserted["run_id"]


def session_run(conn: Conn, instance: str, **overrides: Any) -> tuple[str, str, str]:
    row = {"instance_key": instance, "session_key": SESSION_KEY,
           "run_id": f"run-{uuid.uuid4().hex[:8]}", "run_index": next(_counter),
           "user_id": OWNER} | overrides
    if row.get("status") == "completed":  # (status = 'completed') = (completed_at IS NOT NULL)
        row.setdefault("completed_at", datetime.now(UTC))
    inserted = _insert(conn, "agent_session_runs", row)
    return inserted["instance_key"], inserted["session_key"], inserted["run_id"]


def erasure_report(conn: Conn, instance: str, **overrides: Any) -> uuid.UUID:
    row = {"instance_key": instance, "subject_hash": uuid.uuid4().hex * 2,
           "started_at": _now()} | overrides
    return _insert(conn, "agent_memory_erasures", row)["id"]


def maintenance_event(conn: Conn, instance: str, **overrides: Any) -> int:
    row = {"instance_key": instance, "session_key": SESSION_KEY, "operation": "memory_flush",
           "outcome": "completed"} | overrides
    return _insert(conn, "agent_session_maintenance_events", row)["id"]


FACTORIES: dict[str, Factory] = {
    "api_keys": api_key,
    "inspector_sessions": inspector_session,
    "agent_channel_members": channel_member,
    "agent_session_participants": session_participant,
    "agent_feedback_runs": feedback_run,
    "agent_memory_embedding_generations": generation,
    "agent_memory_sources": source,
    "agent_memory_assertions": assertion,
    "agent_memory_assertion_evidence": evidence,
    "agent_memory_assertion_reviews": review,
    "agent_memory_assertion_conflicts": conflict,
    "agent_memory_assertion_embeddings": assertion_embedding,
    "agent_memory_retrieval_feedback": feedback,
    "agent_memory_ingestion_outbox": outbox_job,
    "agent_memories": memory,
    "agent_memory_chunks": chunk,
    "agent_memory_relations": relation,
    "agent_memory_dreams": dream,
    "wiki_change_proposals": wiki_proposal,
    "agent_memory_v2_cleanup_audit": cleanup_audit,
    "agent_knowledge_entities": entity,
    "agent_knowledge_claims": claim,
    "agent_knowledge_edges": edge,
    "agent_knowledge_evidence": knowledge_evidence,
    "agent_knowledge_entity_embeddings": entity_embedding,
    "agent_knowledge_claim_embeddings": claim_embedding,
    "agent_context_messages": context_message,
    "agent_context_summaries": context_summary,
    "agent_context_summary_messages": summary_message,
    "agent_context_summary_parents": summary_parent,
    "agent_context_items": context_item,
    "agent_session_runs": session_run,
    "agent_session_maintenance_events": maintenance_event,
    "agent_memory_erasures": erasure_report,
}
"""Table name -> factory, for tests that discover tables from the catalog."""
