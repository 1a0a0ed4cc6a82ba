"""Correcting one memory (issue 32.4): its owner says what is true instead.

A person's correction takes effect at once: the corrected statement is written as a new
memory in the same audience with the same subject refs, the old memory's assertion is
superseded by the new one (``lifecycle.supersede``, a person's decision, reason
``user_correction``: the old stays in the assertion history, the new is recalled) and the old
memory row becomes ``superseded`` by the new row. An agent's correction (an agent key, or a
request that declares the agent as its writer) is only proposed: the new statement is the
agent's inference, waiting for review, and a conflict between it and the old one is opened
for a person to decide (``detected_by = write_path``); the old memory stays recalled until
then (a pending challenger hides nothing: ``lifecycle.open_conflict``).

Only the memory's writer (``agent_memories.user_id``, checked in SQL) corrects it; anyone
else's memory and an unknown id are the same NotFound. Runs in the caller's transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

import psycopg

from memory_platform.features.consolidation import lifecycle
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.memories.write_rules import RESERVED_SUBJECT_REFS, caller_metadata
from memory_platform.foundation.errors import Conflict, InvalidInput, NotFound
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.base import EmbeddingProvider

REASON = "user_correction"

_OWN_ACTIVE = """
    SELECT visibility_scope, subject_refs, assertion_id, memory_state, source_type, metadata
      FROM agent_memories
     WHERE instance_key = %s AND id = %s AND user_id = %s
     FOR UPDATE
"""


@dataclass(frozen=True)
class Correction:
    memory_id: UUID                  # the new memory
    assertion_id: UUID | None
    status: str                      # "corrected" (a person's) or "proposed" (an agent's)
    corrected_id: UUID               # the memory it corrects
    conflict_id: UUID | None = None  # an agent's proposal: the conflict a person decides


def correct_memory(conn: psycopg.Connection, settings: Settings, ctx: AccessContext,
                   memory_id: UUID, content: str, *, trust_class: str, by_agent: bool,
                   metadata: dict | None = None, own_metadata: dict | None = None,
                   embedder: EmbeddingProvider | None = None) -> Correction:
    """Correct ``ctx``'s memory ``memory_id`` to say ``content`` (see the module doc);
    ``by_agent``: the correction is the agent's, so it is proposed for review. ``metadata``:
    the platform's keys of the write; ``own_metadata``: the caller's keys of the new memory
    (None: the old memory's are carried forward)."""
    if not ctx.user_id:
        raise NotFound(f"no memory of yours with id {memory_id}", details={"field": "memoryId"})
    row = conn.execute(_OWN_ACTIVE, (ctx.instance_key, memory_id, ctx.user_id)).fetchone()
    if row is None:
        raise NotFound(f"no memory of yours with id {memory_id}", details={"field": "memoryId"})
    visibility, subject_refs, old_assertion, state, source_type, old_metadata = row
    kept = caller_metadata(old_metadata) if own_metadata is None else own_metadata
    if state != "active":
        raise Conflict(f"memory {memory_id} is {state}: correct the memory that replaced it",
                       details={"memoryId": str(memory_id), "state": state})
    if source_type != "fact":
        raise InvalidInput(f"a {source_type} memory is not corrected by its user: only the "
                           "facts they stored are", details={"field": "memoryId"})
    stored = store_memory(conn, settings, ctx, MemoryWrite(
        content=content, source_type="fact", memory_class="explicit", visibility=visibility,
        subject_refs={k: v for k, v in (subject_refs or {}).items()
                      if k not in RESERVED_SUBJECT_REFS},  # the server sets those again
        trust_class=trust_class,
        metadata={**kept, **(metadata or {}), "correctionOf": str(memory_id)},
    ), embedder=embedder, enforce_quota=True)
    if stored.id == memory_id:
        raise InvalidInput("the correction says what the memory already says",
                           details={"field": "content"})
    if by_agent:
        conflict = None
        if old_assertion is not None and stored.assertion_id is not None:
            conflict = lifecycle.open_conflict(
                conn, ctx.instance_key, stored.assertion_id, old_assertion,
                detected_by="write_path", reason="correction proposed by an agent",
                settings=settings)
        return Correction(stored.id, stored.assertion_id, "proposed", memory_id, conflict)
    if old_assertion is not None and stored.assertion_id is not None:
        lifecycle.supersede(conn, ctx.instance_key, old_assertion, stored.assertion_id,
                            reviewer_kind="human", reason_code=REASON,
                            reviewer_id=ctx.user_id, note=f"memory {memory_id} corrected",
                            settings=settings)
    conn.execute("UPDATE agent_memories SET memory_state = 'superseded',"
                 "       superseded_by_memory_id = %s, archived_at = now()"
                 " WHERE instance_key = %s AND id = %s",
                 (stored.id, ctx.instance_key, memory_id))
    return Correction(stored.id, stored.assertion_id, "corrected", memory_id)
