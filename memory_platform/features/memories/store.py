"""``store_memory``: the one write path for durable memory.

Explicit writes (API, MCP ``memory_store``), extracted shared facts, session flushes and
summaries all come through here, so none of them can skip a rule:

1. validate the content (size, control characters, credentials) and the subject refs;
2. resolve the audience (memories/sharing.py) and the memory scope;
3. dedup: the same normalised content with the same subject refs in the same audience within
   the dedup window only touches the existing row's ``updated_at``. The event time
   (``occurred_at``, when what the memory says happened, as opposed to ``created_at``, when
   it was written) is no part of a memory's identity: a repeat that carries another event
   time is still the same memory and keeps the first event time, unless the row had none
   (then the repeat's is set);
4. embed the chunks with no transaction open: what the connection has open by then (the
   reads above, the caller's context resolution) is committed first, so a slow provider
   never holds a transaction, a lock or a pooled session in a transaction (call it outside a
   ``conn.transaction()`` block); a provider failure keeps the write: the row stays
   keyword-reachable and waits in the re-embed backlog;
5. in ONE transaction: source envelope, ``agent_memories`` row, chunks with vectors, and for
   facts a canonical assertion with verbatim evidence under the activation policy. With
   ``write_vectors = "deferred"`` the chunks and the assertion are stored keyword-only and the
   same transaction enqueues one outbox job with their vectors (memories/vectors.py): the
   row is keyword-searchable at once and vector-searchable once the job ran.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.features.memories.chunk_rows import insert_chunks
from memory_platform.features.memories.chunking import Chunk, chunk_text
from memory_platform.features.memories.quota import check_quota
from memory_platform.features.memories.sharing import resolve_visibility
from memory_platform.features.memories.turns import TurnContext, is_turn, turn_context
from memory_platform.features.memories.validation import (
    clean_content,
    clean_metadata,
    clean_occurred_at,
    clean_title,
)
from memory_platform.features.memories.vectors import enqueue_vectors, notify_written
from memory_platform.features.memories.write_rules import (
    ASSERTION_SOURCE_TYPES,
    audience_refs,
    check_validity,
    clean_subject_refs,
    dedup_lock_key,
    embedding_texts,
    fact_assertion_fields,
    fact_slot,
    memory_metadata,
    memory_scope,
    source_locator,
    source_owner,
    subject_key,
    validate_kind,
)
from memory_platform.foundation.db.units import commit_if_idle
from memory_platform.foundation.settings import Settings
from memory_platform.foundation.text import content_hash
from memory_platform.shared.access import AccessContext, Audience, AudienceKind, audience_for
from memory_platform.shared.embeddings.base import EmbeddingProvider, embed_or_defer
from memory_platform.shared.embeddings.factory import get_provider
from memory_platform.shared.embeddings.generations import Generation, ensure_generation
from memory_platform.shared.ledger import assertions as ledger
from memory_platform.shared.ledger.policy import (
    POLICY_ACTIVATED,
    RESTATEMENT_REASON,
    created_state,
    restatement_activates,
    write_path_decision,
)
from memory_platform.shared.ledger.recall import TOLD
from memory_platform.shared.ledger.sources import ensure_source


@dataclass(frozen=True)
class MemoryWrite:
    """What a caller wants remembered. ``visibility=None`` means the context's default.
    ``occurred_at`` is the event time (timezone-aware, at most a day ahead of now), distinct
    from the write time; None: unknown."""

    content: str
    source_type: str = "fact"
    memory_class: str = "explicit"
    visibility: AudienceKind | None = None
    explicit_private: bool = False
    agent_personal: bool = False
    subject_refs: Mapping[str, Any] = field(default_factory=dict)
    assertion_type: str = "fact"
    trust_class: str = "human_direct"
    title: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    occurred_at: datetime | None = None
    valid_until: datetime | None = None   # when the fact stops being true (its assertion's
                                          # valid_to; a past one stores an ended fact)
    valid_from: datetime | None = None    # when it starts being true (valid_from; not
                                          # recalled before)
    subject: str | None = None     # the slot the fact fills (write_rules.fact_slot)
    predicate: str | None = None


@dataclass(frozen=True)
class StoredMemory:
    id: uuid.UUID
    audience: Audience
    deduplicated: bool
    assertion_id: uuid.UUID | None = None
    assertion_status: str | None = None
    embedded: bool = False
    vectors_deferred: bool = False   # embedded, the vectors wait in the outbox


def _validate_kind(write: MemoryWrite) -> None:
    validate_kind(write.source_type, write.trust_class, write.assertion_type)


# The live row a write repeats, among the rows the writer may learn of (F25): rows the writer
# can recall (no assertion, or a told one; the audience is the writer's own) and the
# writer's own rows whatever their assertion's state. A repeat of anybody else's unrecallable
# row (pending, rejected, conflicted) is no dedup hit: it is written as a row of its own, so
# the answer never confirms that row or its state.
_DUPLICATE = sql.SQL("""
    SELECT m.id, m.assertion_id, a.status
      FROM agent_memories m
      LEFT JOIN agent_memory_assertions a
        ON a.instance_key = m.instance_key AND a.id = m.assertion_id
     WHERE m.instance_key = %s
       AND m.visibility_scope = %s
       AND m.audience_key = %s
       AND m.content_hash = %s
       AND m.subject_key = %s
       AND m.memory_state = 'active'
       AND m.source_type <> 'message'   -- a session item's turn (sessions/turn_recall.py)
       AND m.updated_at > now() - make_interval(hours => %s)
       AND (m.assertion_id IS NULL OR {told} OR m.user_id IS NOT DISTINCT FROM %s)
     ORDER BY m.updated_at DESC
     LIMIT 1
""").format(told=TOLD)


def _find_duplicate(conn, ctx: AccessContext, audience: Audience, digest: str, subject: str,
                    window_hours: int):
    return conn.execute(
        _DUPLICATE,
        (ctx.instance_key, audience.kind, audience.key, digest, subject, window_hours,
         ctx.user_id),
    ).fetchone()


def _restates_own_fact(conn, ctx: AccessContext, assertion_id: uuid.UUID) -> bool:
    """Whether the assertion was first stated by the writer: the user of its earliest memory
    row is the writer's (both user-less counts too; the write's own new row is not in yet)."""
    first = conn.execute(
        "SELECT user_id FROM agent_memories WHERE instance_key = %s AND assertion_id = %s"
        " ORDER BY created_at, id LIMIT 1",
        (ctx.instance_key, assertion_id),
    ).fetchone()
    return first is not None and first[0] == ctx.user_id


def _dedup_hit(conn, ctx: AccessContext, write: MemoryWrite, audience: Audience,
               existing: tuple) -> StoredMemory:
    """A repeat only touches ``updated_at`` (and may activate an undecided assertion); its
    event time fills the row's only when the row has none (the first one stands)."""
    memory_id, assertion_id, status = existing[:3]
    with conn.transaction():
        conn.execute("UPDATE agent_memories SET updated_at = now(),"
                     " occurred_at = coalesce(occurred_at, %s) WHERE id = %s",
                     (write.occurred_at, memory_id))
        if assertion_id is not None:
            review_state = conn.execute(
                "SELECT review_state FROM agent_memory_assertions WHERE id = %s",
                (assertion_id,),
            ).fetchone()[0]
            ref = _activate_on_restatement(conn, ctx, write, audience,
                                           ledger.AssertionRef(assertion_id, False, status,
                                                               review_state))
            status = ref.status
    return StoredMemory(memory_id, audience, True, assertion_id, status)


def store_memory(
    conn: psycopg.Connection,
    settings: Settings,
    ctx: AccessContext,
    write: MemoryWrite,
    *,
    embedder: EmbeddingProvider | None = None,
    enforce_quota: bool = False,
) -> StoredMemory:
    """``enforce_quota``: refuse the write past the storage quota (memories/quota.py; the
    write paths a key reaches set it, maintenance does not)."""
    _validate_kind(write)
    content = clean_content(write.content, max_chars=settings.memory_max_chars)
    write = replace(write, title=clean_title(write.title),
                    metadata=clean_metadata(write.metadata),
                    occurred_at=clean_occurred_at(write.occurred_at, now=datetime.now(UTC)))
    check_validity(write.valid_from, write.valid_until)
    refs = clean_subject_refs(write.subject_refs)
    slot = fact_slot(write.subject, write.predicate, refs, write.assertion_type)
    write = replace(write, subject=slot[0], predicate=slot[1])
    kind = resolve_visibility(conn, ctx, write.visibility,
                              explicit_private=write.explicit_private,
                              agent_personal=write.agent_personal)
    audience = audience_for(kind, ctx)
    # Shared facts keep who said them, even in the team audience.
    refs = audience_refs(refs, ctx, audience)
    digest, subject = content_hash(content), subject_key(refs)

    existing = _find_duplicate(conn, ctx, audience, digest, subject,
                               settings.memory_dedup_window_hours)
    if existing:
        return _dedup_hit(conn, ctx, write, audience, existing)

    chunks = chunk_text(content, settings.chunk_target_chars, settings.chunk_overlap_chars)
    provider = embedder or get_provider(settings)
    turn = (turn_context(conn, ctx, audience, write.occurred_at)
            if is_turn(ctx, write.source_type, write.memory_class, write.occurred_at) else None)
    texts = embedding_texts(content, chunks,
                            asserted=write.source_type in ASSERTION_SOURCE_TYPES)
    passage = (turn.passage(chunks[0].content)
               if turn is not None and settings.turn_context_vectors else None)
    # No transaction stays open (nor a lock held) while the provider is called.
    commit_if_idle(conn)
    vectors = embed_or_defer(provider, texts + ([passage] if passage else []), "memory write")
    context_vector = None
    if vectors is not None and passage:
        vectors, context_vector = vectors[:-1], vectors[-1]

    with conn.transaction():
        # Serialise concurrent writers of the same content in the same audience, then look
        # again: the loser of the race becomes a dedup hit instead of a duplicate row.
        lock = dedup_lock_key(ctx.instance_key, audience, digest, subject)
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock,))
        existing = _find_duplicate(conn, ctx, audience, digest, subject,
                                   settings.memory_dedup_window_hours)
        if existing:
            return _dedup_hit(conn, ctx, write, audience, existing)
        generation = None if vectors is None else ensure_generation(conn, ctx.instance_key,
                                                                     provider)
        stored = _insert(conn, ctx, write, content, refs, audience, digest, subject, chunks,
                         vectors, generation, provider, turn, context_vector,
                         defer=settings.write_vectors == "deferred")
        if enforce_quota:
            check_quota(conn, settings, ctx.instance_key, ctx.user_id)
    if stored.vectors_deferred:
        notify_written()
    return stored


def _insert(conn, ctx: AccessContext, write: MemoryWrite, content: str, refs: dict[str, str],
            audience: Audience, digest: str, subject: str, chunks: list[Chunk],
            vectors: np.ndarray | None, generation: Generation | None,
            provider: EmbeddingProvider, turn: TurnContext | None,
            context_vector: np.ndarray | None = None, *, defer: bool = False) -> StoredMemory:
    memory_id = uuid.uuid4()
    owner = source_owner(ctx, audience)
    source_id = ensure_source(
        conn, instance_key=ctx.instance_key, audience=audience,
        source_key=f"memory:{memory_id}", source_kind="memory", trust_class=write.trust_class,
        content=content, owner_user_id=owner, session_key=ctx.session_key, memory_id=memory_id,
        locator=source_locator(memory_id, write.source_type),
    )
    assertion = None
    if write.source_type in ASSERTION_SOURCE_TYPES:
        assertion = _assert_fact(conn, ctx, write, content, refs, audience, owner, source_id,
                                 chunks[0].content)
    metadata = memory_metadata(write.metadata, write.memory_class)
    conn.execute(
        """
        INSERT INTO agent_memories
               (id, instance_key, memory_scope, visibility_scope, audience_key, user_id,
                session_key, group_room_id, channel_thread_key, channel_type, subject_refs,
                source_type, title, content, content_hash, subject_key, metadata,
                assertion_id, source_id, occurred_at, previous_memory_id)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,
                %s, %s)
        """,
        (memory_id, ctx.instance_key, memory_scope(audience, ctx, write.source_type),
         audience.kind, audience.key, ctx.user_id, ctx.session_key, ctx.group_room_id,
         ctx.channel_thread_key, ctx.channel_type, Jsonb(refs), write.source_type, write.title,
         content, digest, subject, Jsonb(metadata), assertion.id if assertion else None,
         source_id, write.occurred_at, turn.previous_memory_id if turn else None),
    )
    vectored = assertion is not None and assertion.recallable
    if defer and generation is not None and vectors is not None:
        insert_chunks(conn, ctx.instance_key, memory_id, chunks, None, None, provider,
                      context=turn.text if turn else None, copied=turn.copied if turn else ())
        enqueue_vectors(conn, ctx.instance_key, memory_id, vectors, len(chunks), generation,
                        provider, (assertion.id, content) if vectored and assertion else None,
                        context_vector)
        return StoredMemory(memory_id, audience, False, assertion.id if assertion else None,
                            assertion.status if assertion else None, False, True)
    insert_chunks(conn, ctx.instance_key, memory_id, chunks, vectors, generation, provider,
                  context=turn.text if turn else None, context_vector=context_vector,
                  copied=turn.copied if turn else ())
    if assertion and vectored and generation and vectors is not None:
        # The chunk's vector when the fact is a single chunk, else the whole text's.
        ledger.store_assertion_vectors(conn, ctx.instance_key, generation,
                                       [(assertion.id, content, vectors[-1])])
    return StoredMemory(memory_id, audience, False, assertion.id if assertion else None,
                        assertion.status if assertion else None, generation is not None)


def _assert_fact(conn, ctx: AccessContext, write: MemoryWrite, content: str,
                 refs: dict[str, str], audience: Audience, owner: str | None,
                 source_id: uuid.UUID, excerpt: str) -> ledger.AssertionRef:
    """The canonical assertion of a fact, with the memory's own text as verbatim evidence,
    activated at once only under the write-path policy."""
    origin, confidence, metadata = fact_assertion_fields(write.memory_class, write.trust_class)
    assertion = ledger.ensure_assertion(
        conn, instance_key=ctx.instance_key, audience=audience, text=content,
        assertion_type=write.assertion_type, origin=origin, owner_user_id=owner,
        subject_refs=refs, confidence=confidence, metadata=metadata,
        valid_to=write.valid_until, valid_from=write.valid_from, subject=write.subject,
        predicate=write.predicate, slot_in_identity=False,
    )
    ledger.add_evidence(conn, instance_key=ctx.instance_key, audience=audience,
                        assertion_id=assertion.id, source_id=source_id, excerpt=excerpt)
    if not assertion.created:
        return _activate_on_restatement(conn, ctx, write, audience, assertion)
    decision = write_path_decision(write.trust_class, write.assertion_type, audience.kind)
    ledger.record_decision(
        conn, instance_key=ctx.instance_key, assertion_id=assertion.id,
        decision=decision.review_decision, reviewer_kind="policy",
        reason_code=decision.reason_code,
    )
    if decision.activate:
        return ledger.AssertionRef(assertion.id, True, *created_state(decision))
    return assertion


def _activate_on_restatement(conn, ctx: AccessContext, write: MemoryWrite, audience: Audience,
                             assertion: ledger.AssertionRef) -> ledger.AssertionRef:
    """A fact already in the ledger but still undecided (e.g. an assistant's inference)
    activates when its own author restates it in a write that qualifies on its own; decided
    ones stay as they are (a human decision always stands). Another user's restatement adds
    evidence but activates nothing (F25): a fact nobody approved cannot be switched on by
    guessing its text."""
    decision = write_path_decision(write.trust_class, write.assertion_type, audience.kind)
    if not restatement_activates(assertion.review_state, decision) \
            or not _restates_own_fact(conn, ctx, assertion.id):
        return assertion
    ledger.record_decision(conn, instance_key=ctx.instance_key, assertion_id=assertion.id,
                           decision="activate", reviewer_kind="policy",
                           reason_code=RESTATEMENT_REASON)
    return ledger.AssertionRef(assertion.id, False, *POLICY_ACTIVATED)
