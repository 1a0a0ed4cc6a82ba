"""Canonical assertions, their evidence and review decisions.

An assertion's identity is its audience plus a hash of its normalised slot and text, so the
same fact stated twice in one audience is one assertion with two pieces of evidence. Review
decisions are appended, never edited; a human decision always wins over automation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.foundation.text import content_hash, normalise
from memory_platform.shared.access import Audience
from memory_platform.shared.ledger.recall import is_approved_active

if TYPE_CHECKING:
    from memory_platform.shared.embeddings.generations import Generation

HUMAN_REVIEW_STATES = ("human_approved", "human_rejected")


def person_decided(alias: str = "a") -> sql.Composable:
    """THE "a person decided" rule, as a SQL condition over the assertion row ``alias``: its
    review state is a person's (:data:`HUMAN_REVIEW_STATES`), or a person wrote any review
    row of it (a person's ``defer``, ``expire`` or ``supersede`` leaves the state as
    automation set it). Human decisions win (invariant 8): automation changes nothing this
    holds for. :func:`human_decided` answers it for one row, :func:`record_decision` guards
    with it, and the sweeps that must skip such rows filter with it (:data:`PERSON_DECIDED`
    over ``a``)."""
    return sql.SQL(
        "({a}.review_state IN ({states})"
        " OR EXISTS (SELECT 1 FROM agent_memory_assertion_reviews person_review"
        " WHERE person_review.instance_key = {a}.instance_key"
        " AND person_review.assertion_id = {a}.id AND person_review.reviewer_kind = 'human'))"
    ).format(a=sql.Identifier(alias),
             states=sql.SQL(", ").join(map(sql.Literal, HUMAN_REVIEW_STATES)))


PERSON_DECIDED = person_decided("a")
ASSERTION_TYPES = ("fact", "preference", "decision", "constraint", "procedure", "correction",
                   "observation")


@dataclass(frozen=True)
class AssertionRef:
    id: UUID
    created: bool
    status: str
    review_state: str

    @property
    def recallable(self) -> bool:
        return is_approved_active(self.status, self.review_state)


def identity_hash(text: str, subject: str | None = None, predicate: str | None = None) -> str:
    slot = "\x1f".join(normalise(part or "") for part in (subject, predicate, text))
    return hashlib.sha256(slot.encode()).hexdigest()


def ensure_assertion(
    conn: psycopg.Connection,
    *,
    instance_key: str,
    audience: Audience,
    text: str,
    assertion_type: str,
    origin: str,
    owner_user_id: str | None = None,
    subject: str | None = None,
    predicate: str | None = None,
    confidence: float = 0.5,
    subject_refs: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    dream_id: UUID | None = None,
    valid_to: datetime | None = None,
    valid_from: datetime | None = None,
    slot_in_identity: bool = True,
) -> AssertionRef:
    """The assertion with this identity in this audience, created as a candidate if new
    (``valid_from`` / ``valid_to``: when what it says starts and stops being true; the read
    rule and the expiry sweep act on them). The identity is the text in its slot;
    ``slot_in_identity=False`` (the write path, one assertion per text and audience whichever
    slot a write names, as the bulk import has it) hashes the text alone and keeps the slot
    of the first write."""
    identity = (identity_hash(text, subject, predicate) if slot_in_identity
                else identity_hash(text))
    row = conn.execute(
        """
        INSERT INTO agent_memory_assertions
               (instance_key, audience_kind, audience_key, owner_user_id, identity_hash,
                assertion_type, subject, predicate, assertion_text, origin, confidence,
                subject_refs, metadata, dream_id, valid_to, valid_from)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
        ON CONFLICT (instance_key, audience_kind, audience_key, identity_hash) DO NOTHING
        RETURNING id, status, review_state
        """,
        (instance_key, audience.kind, audience.key, owner_user_id, identity, assertion_type,
         subject, predicate, text, origin, confidence, Jsonb(dict(subject_refs or {})),
         Jsonb(dict(metadata or {})), dream_id, valid_to, valid_from),
    ).fetchone()
    if row:
        return AssertionRef(row[0], True, row[1], row[2])
    row = conn.execute(
        """
        SELECT id, status, review_state
          FROM agent_memory_assertions
         WHERE instance_key = %s AND audience_kind = %s AND audience_key = %s
           AND identity_hash = %s
        """,
        (instance_key, audience.kind, audience.key, identity),
    ).fetchone()
    return AssertionRef(row[0], False, row[1], row[2])


def add_evidence(
    conn: psycopg.Connection,
    *,
    instance_key: str,
    audience: Audience,
    assertion_id: UUID,
    source_id: UUID,
    excerpt: str,
    stance: str = "supports",
    dream_id: UUID | None = None,
) -> None:
    """Link an assertion to a verbatim excerpt of a source (idempotent). The database
    rejects an excerpt that is not verbatim in the source, or a source of another audience."""
    conn.execute(
        """
        INSERT INTO agent_memory_assertion_evidence
               (instance_key, audience_kind, audience_key, assertion_id, source_id, stance,
                excerpt, dream_id)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
        ON CONFLICT (assertion_id, source_id, stance, md5(excerpt)) DO NOTHING
        """,
        (instance_key, audience.kind, audience.key, assertion_id, source_id, stance, excerpt,
         dream_id),
    )


def record_decision(
    conn: psycopg.Connection,
    *,
    instance_key: str,
    assertion_id: UUID,
    decision: str,
    reviewer_kind: str,
    reason_code: str,
    reviewer_id: str | None = None,
    note: str | None = None,
    dream_id: UUID | None = None,
) -> None:
    """Append a review decision and apply it to the assertion's state.

    Automation (policy, curator, system) never overrides a human decision: once a person has
    decided (:func:`person_decided`: approved, rejected, or any other review of theirs),
    automated decisions are still recorded but change nothing."""
    conn.execute(
        """
        INSERT INTO agent_memory_assertion_reviews
               (instance_key, assertion_id, decision, reviewer_kind, reviewer_id, reason_code,
                note, dream_id)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
        """,
        (instance_key, assertion_id, decision, reviewer_kind, reviewer_id, reason_code, note,
         dream_id),
    )
    human = reviewer_kind == "human"
    new_state = {
        ("activate", False): ("active", "policy_approved"),
        ("approve", False): ("active", "policy_approved"),
        ("reject", False): ("rejected", "policy_rejected"),
        ("approve", True): ("active", "human_approved"),
        ("activate", True): ("active", "human_approved"),
        ("reject", True): ("rejected", "human_rejected"),
        # Revoking withdraws an approval; a rollback compensates automation (its review
        # state is kept: the tombstone says what happened, the reviews say why).
        ("revoke", False): ("rejected", "policy_rejected"),
        ("revoke", True): ("rejected", "human_rejected"),
        ("rollback", False): ("tombstoned", None),
        ("rollback", True): ("tombstoned", None),
    }.get((decision, human))
    if new_state is None:
        return
    conn.execute(
        sql.SQL("""
        UPDATE agent_memory_assertions a
           SET status = %s, review_state = coalesce(%s, a.review_state)
         WHERE a.instance_key = %s AND a.id = %s
           AND (%s OR NOT {decided})
        """).format(decided=PERSON_DECIDED),
        (*new_state, instance_key, assertion_id, human),
    )


def human_decided(conn: psycopg.Connection, instance_key: str,
                  assertion_id: UUID) -> bool | None:
    """Whether a person has decided the assertion (:func:`person_decided`); None when it
    does not exist. The row stays locked until the transaction ends: callers decide about
    it next."""
    row = conn.execute(
        sql.SQL("""
        SELECT {decided}
          FROM agent_memory_assertions a
         WHERE a.instance_key = %s AND a.id = %s
         FOR UPDATE
        """).format(decided=PERSON_DECIDED),
        (instance_key, assertion_id),
    ).fetchone()
    return None if row is None else bool(row[0])


def restore_state(
    conn: psycopg.Connection,
    *,
    instance_key: str,
    assertion_id: UUID,
    status: str,
    review_state: str,
    reason_code: str,
    dream_id: UUID | None = None,
) -> bool:
    """Compensate an automated decision: append a system ``rollback`` review and put the
    assertion back into ``status``/``review_state``, unless a human has decided meanwhile
    (then nothing is written and False is answered)."""
    if human_decided(conn, instance_key, assertion_id) is not False:
        return False
    conn.execute(
        """
        INSERT INTO agent_memory_assertion_reviews
               (instance_key, assertion_id, decision, reviewer_kind, reason_code, note,
                dream_id)
        VALUES (%s, %s, 'rollback', 'system', %s, %s, %s)
        """,
        (instance_key, assertion_id, reason_code, f"restored={status}/{review_state}",
         dream_id),
    )
    conn.execute(
        "UPDATE agent_memory_assertions SET status = %s, review_state = %s"
        " WHERE instance_key = %s AND id = %s",
        (status, review_state, instance_key, assertion_id),
    )
    return True


_INSERT_VECTOR = """
    INSERT INTO agent_memory_assertion_embeddings
           (instance_key, assertion_id, generation_id, embedding_key, embedding, content_hash)
    VALUES (%s, %s, %s, %s, %s, %s)
    ON CONFLICT (assertion_id, generation_id) DO
"""
_KEEP = "NOTHING"
_REPLACE = "UPDATE SET embedding = EXCLUDED.embedding, content_hash = EXCLUDED.content_hash"


def store_assertion_vectors(conn: psycopg.Connection, instance_key: str,
                            generation: Generation, vectors: Iterable[tuple[UUID, str, Any]],
                            *, replace: bool = False) -> None:
    """Each (assertion id, its text, its vector) in ``generation``. An assertion that already
    has a vector of that generation keeps it, unless ``replace`` (its text was rewritten)."""
    with conn.cursor() as cur:
        cur.executemany(
            _INSERT_VECTOR + (_REPLACE if replace else _KEEP),
            [(instance_key, assertion_id, generation.id, generation.generation_key, vector,
              content_hash(text)) for assertion_id, text, vector in vectors],
        )
