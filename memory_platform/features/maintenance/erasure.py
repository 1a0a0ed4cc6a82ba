"""Erasure of a person: every row of a user's private audience and what they said or
authored elsewhere leaves the instance, in ONE committed transaction, and a content-free
report stays. Afterwards no text, varchar or jsonb column of the platform database holds
their words or their user id (tests/api/test_erasure_complete.py scans every one).

The rules, one per kind of row (``user`` = the erased user id, in one instance; delete =
the row goes; redact = the row stays, the person's part of it goes; re-derive = the row is
rebuilt from what stays; pseudonymise = the row stays, their id becomes ``erased:<hash>``
with a random salt per erasure, never stored):

**delete**
  - their sessions (owner, or the state names them): turns, summaries, links, assembly,
    state, runs, maintenance events, participants; their turns and runs in other sessions;
    every summary covering one of their turns and the summaries above it (derived text);
  - what maintenance drew from a removed turn (shared facts, flush:
    ``metadata.sourceMessageId``), whoever's name the row carries (new facts are written as
    their author: ``sessions/facts.py``);
  - sources they own, of their audience or sessions, of a removed memory; assertions of
    their audience or supported only by removed sources (or, without evidence, theirs),
    with evidence, reviews, conflicts, embeddings, history, feedback and outbox jobs;
    memories that are private to them, theirs, from a removed source, projecting a removed
    assertion or a removed summary's, with chunks and relations;
  - the knowledge graph of their audience; the entity linked to their user record in every
    audience, with its claims and edges; a claim or edge that only removed rows supported;
    an entity the withdrawal left unconnected and not active (its label was their words);
  - Dreams of their audience; wiki drafts (any state) of those or citing a removed row;
    consolidation audit rows about removed rows;
  - their profile, preferences, registry row, storage counter, memberships, participation,
    API keys, retrieval feedback and feedback runs; events naming them or a removed row
    (the report's own ``user.erased`` event names nobody); the word counts (0033) of
    words only removed chunks and claims held;
  - their note or reason on a decision that stays.

**keep, their part withdrawn**: an assertion other people's evidence still supports (their
evidence goes, ``owner_user_id`` cleared, projected again); graph refs and evidence citing
removed rows (``graph.retract``); ``subject_refs.userId`` naming them (the key goes).

**redact**: every other Dream whose ``proposals_json``, ``stats_json``, ``diagnostics`` or
``error`` cites a removed row, names or quotes them: those items are replaced
(``redaction.py``); the Dream ids and their Dagster run ids go into the report.

**re-derive**: another user's stored profile listing a removed or withdrawn item
(``profiles.py``); the assembly of another person's session that held a removed summary
(what the summary stood for and stays takes its place).

**pseudonymise**: the reviewer of a kept review decision, the decider of a kept wiki
decision, the resolver of a conflict, whoever added a member or changed a setting.

Append-only tables (reviews, the consolidation audit, the history) refuse UPDATE and
DELETE; migrations 0022 and 0031 let them through when the transaction-local setting
``memory.erasure`` is on, which only :func:`erase_user` sets (erasure is the one sanctioned
change). The report (``agent_memory_erasures``) keeps per-table counts (``removed``) and
per-rule counts (``updated``: ``table.column`` redacted, pseudonymised, re-derived) and a
hash of (instance, user), never content or row ids. The report object also carries, for the
caller's Dagster cleanup after the commit, the removed or redacted Dream ids and their
Dagster run ids (content-free, in :meth:`ErasureReport.as_dict`) and the partition keys of
their private Dreams (which hold the user id: never serialised).

Explicit deletes run child tables first, so each count is the rows of that table that
existed (nothing is left for a cascade to remove uncounted). The kept rows' parts are in
``erasure_kept.py``. The statements themselves (the sets, the DELETE table, the kept rows'
updates) are data in ``erasure_statements.py``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid4

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.features.graph import retract
from memory_platform.features.graph.types import GraphChanges
from memory_platform.features.maintenance import erasure_kept as kept
from memory_platform.features.maintenance.erasure_statements import (
    DELETES,
    FILL,
    FILL_LEDGER,
    FILL_REFS,
    GRAPH_EVIDENCE,
    SCRUB,
    SETS,
    UPDATES,
)
from memory_platform.features.projection.outbox import ASSERTION_PROJECTION, enqueue
from memory_platform.foundation.db.locks import try_dreaming_lock_for_transaction
from memory_platform.foundation.db.units import committed_unit, require_idle
from memory_platform.foundation.errors import DreamLocked, NotFound
from memory_platform.foundation.settings import Settings
from memory_platform.shared.users import USER_ID_MAX_CHARS, checked_user_id


@dataclass
class ErasureReport:
    """What one erasure removed (rows per table) and changed (rows per table.column or graph
    figure), without content."""

    id: UUID | None
    instance_key: str
    subject_hash: str
    removed: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)
    # For the cleanup of Dagster's storage after the commit (orchestration/): the Dreams
    # removed or redacted, their Dagster run ids, and the partition keys of the person's
    # own (private) Dreams. A private partition key holds the user id: it is handed to the
    # caller, never stored or serialised (as_dict). (The private partition of a person
    # without a Dream row is derived from the user id by the caller: dreaming.partitions
    # is above this layer.)
    dream_ids: list[UUID] = field(default_factory=list)
    dagster_run_ids: list[str] = field(default_factory=list)
    partition_keys: list[str] = field(default_factory=list)

    @property
    def total_removed(self) -> int:
        return sum(self.removed.values())

    def as_dict(self) -> dict[str, Any]:
        return {"id": str(self.id) if self.id else None, "instanceKey": self.instance_key,
                "subjectHash": self.subject_hash, "removed": dict(self.removed),
                "updated": dict(self.updated), "totalRemoved": self.total_removed,
                "dreamIds": [str(d) for d in self.dream_ids],
                "dagsterRunIds": list(self.dagster_run_ids)}


def subject_hash(instance_key: str, user_id: str) -> str:
    """The report's name for the person: sha256 of the instance key, NUL, the user id."""
    return hashlib.sha256(f"{instance_key}\0{user_id}".encode()).hexdigest()


def checked_id(value: object, name: str) -> str:
    """``value`` if it names an instance or user an erasure can take, else InvalidInput
    (``users.checked_user_id``: the one rule)."""
    return checked_user_id(value, name)




def erase_user(conn: psycopg.Connection, settings: Settings, instance_key: str,
               user_id: str, *, requested_by: str = "") -> ErasureReport:
    """Erase ``user_id`` from ``instance_key`` in one committed transaction (see the module
    docstring) and answer the report, also stored in ``agent_memory_erasures``.
    Self-committing: call it on a connection outside a transaction. Erasing a user with no
    rows is not an error: the report counts nothing. ``settings`` is taken for the calling
    convention of maintenance work (profiles are re-derived with it)."""
    instance_key = checked_id(instance_key, "instance")
    user_id = checked_id(user_id, "user")
    requested_by = requested_by[:USER_ID_MAX_CHARS] if requested_by else ""
    require_idle(conn, "erase_user")
    report = ErasureReport(None, instance_key, subject_hash(instance_key, user_id))
    with committed_unit(conn):
        _erase(conn, settings, report, {"i": instance_key, "u": user_id}, ("private", user_id),
               requested_by)
    return report


# What a memory's forgetting seeds the sets with: the memory and the sources it was
# written from or that name it (FILL_LEDGER then adds what was derived only from them).
_SEED_MEMORY = (
    "INSERT INTO erase_memories VALUES (%(m)s)",
    """INSERT INTO erase_sources
       SELECT s.id FROM agent_memory_sources s
        WHERE s.instance_key = %(i)s
          AND (s.memory_id = %(m)s
               OR s.id = (SELECT source_id FROM agent_memories
                           WHERE instance_key = %(i)s AND id = %(m)s))
       ON CONFLICT DO NOTHING""",
)
_OWN_MEMORY = """
    SELECT visibility_scope, audience_key FROM agent_memories
     WHERE instance_key = %s AND id = %s AND user_id = %s
     FOR UPDATE
"""


def forget_memory(conn: psycopg.Connection, settings: Settings, instance_key: str,
                  user_id: str, memory_id: UUID) -> ErasureReport:
    """A user deletes one of their own memories (``agent_memories.user_id`` is theirs,
    checked in SQL; anyone else's or an unknown id: NotFound, the same answer) and what was
    derived only from it, by the rules of a person's erasure with the sets seeded by the
    memory instead of the person: its chunks and sources, an assertion no other source
    supports (with its evidence, reviews, history, feedback, embeddings and projection), the
    graph refs citing them (claims and edges only they supported go), Dreams' items citing
    them redacted, profiles listing them re-derived. An assertion other sources support
    stays, projected again without this one. Nothing of the person else is touched: the
    user-keyed rules run with an id no user can have. One committed transaction;
    self-committing; DreamLocked while a Dream runs. The report names the memory by hash.
    Not cleaned: Dagster's run logs of Dreams that quoted it (erasing the person does)."""
    instance_key = checked_id(instance_key, "instance")
    user_id = checked_id(user_id, "user")
    require_idle(conn, "forget_memory")
    report = ErasureReport(None, instance_key, subject_hash(instance_key, f"memory:{memory_id}"))
    with committed_unit(conn):
        row = conn.execute(_OWN_MEMORY, (instance_key, memory_id, user_id)).fetchone()
        if row is None:
            raise NotFound(f"no memory of yours with id {memory_id}",
                           details={"field": "memoryId"})
        # A user id is printable (users.checked_user_id): no rule keyed by the person
        # matches this one, and it is new each time.
        params = {"i": instance_key, "u": f"\x01forget:{uuid4()}", "m": memory_id}
        _erase(conn, settings, report, params, (row[0], row[1]), "owner", seed=_SEED_MEMORY,
               memory_audience=(row[0], row[1]))
    return report


# What removing session items seeds the sets with: the items (FILL then adds the summaries
# covering them, FILL_LEDGER what was drawn from them).
_SEED_MESSAGES = ("INSERT INTO erase_messages SELECT DISTINCT unnest(%(ms)s::uuid[])",)


def forget_session_items(conn: psycopg.Connection, settings: Settings, instance_key: str,
                         user_id: str, session_key: str,
                         message_ids: list[UUID]) -> ErasureReport:
    """A user's items of a session go (``message_ids``: chosen and locked by the caller,
    ``sessions.transcript``) with what was derived from them, by the rules of a person's
    erasure with the sets seeded by the items instead of the person: every summary covering
    one of them and the summaries above it (the session's assembly then holds what they
    stood for and stays, ``erasure_kept.restore_assemblies``), the memories drawn from them
    (a removed summary's memory; shared facts and the flush: ``metadata.sourceMessageId``),
    their sources, an assertion no other source supports, graph refs, Dreams' items citing
    them redacted, profiles listing them re-derived. Nothing else of the person is touched
    (the user-keyed rules run with an id no user can have). Runs inside the caller's
    transaction and commits nothing; DreamLocked while a Dream runs. The report
    (``subject_kind = session_items``) names the session by hash and keeps no audience."""
    instance_key = checked_id(instance_key, "instance")
    user_id = checked_id(user_id, "user")
    report = ErasureReport(None, instance_key,
                           subject_hash(instance_key, f"session:{session_key}"))
    params = {"i": instance_key, "u": f"\x01forget:{uuid4()}", "ms": list(message_ids)}
    with conn.transaction():
        _erase(conn, settings, report, params, ("private", user_id), "owner",
               seed=_SEED_MESSAGES, subject_kind="session_items")
    return report


def _erase(conn: psycopg.Connection, settings: Settings, report: ErasureReport,
           params: dict[str, Any], partition: tuple[str, str], requested_by: str, *,
           seed: tuple[str, ...] = (),
           memory_audience: tuple[str, str] | None = None,
           subject_kind: str | None = None) -> None:
    """The erasure inside the caller's transaction: the sets (``seed`` statements first,
    then the person's rules over ``params["u"]``), the deletes and the kept rows' changes,
    the report row (``memory_audience``: a forgotten memory's, where its event goes;
    ``subject_kind``: what the report says it erased, by default a memory or a user).
    ``partition``: the graph partition locked first."""
    instance_key = params["i"]
    if not try_dreaming_lock_for_transaction(conn):
        raise DreamLocked("a Dream is running (the Dreaming advisory lock is held): it may "
                          "be reading these memories; nothing was erased, erase "
                          "again when it has finished")
    started = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    conn.execute("SELECT set_config('memory.erasure', 'on', true)")
    # The instance's word counts (0033) change only with the rows deleted below: their
    # turn is taken now, so what went is what the counts lost.
    conn.execute("SELECT memory_lexemes_lock(%(i)s)", params)
    lexemes = _lexeme_rows(conn, params)
    # The store's lock of every graph partition touched below: the seed's own, then
    # (inside retract) those of the withdrawn refs.
    retract.lock_partitions(conn, instance_key, [partition])
    for definition in SETS:
        conn.execute(f"CREATE TEMP TABLE {definition} ON COMMIT DROP")
    for statement in seed:
        conn.execute(statement, params)
    for statement in FILL:
        conn.execute(statement, params)
    _fill_ledger(conn, params)
    conn.execute(FILL_REFS)
    erased = kept.erased_of(conn, params)
    dreams = kept.dream_candidates(conn, params)
    places = kept.summary_places(conn, params)
    (report.dream_ids, report.dagster_run_ids,
     report.partition_keys) = kept.erased_dream_runs(conn)
    # Memories without an assertion: their graph refs leave by memory id (refs of removed
    # assertions leave through retraction; those of kept assertions stay supported).
    memory_ids = [r[0] for r in conn.execute(
        "SELECT m.id FROM agent_memories m WHERE m.instance_key = %(i)s"
        " AND m.id IN (SELECT id FROM erase_memories) AND m.assertion_id IS NULL",
        params).fetchall()]
    # Kept assertions whose memory rows go: projected again from what remains.
    reproject = [r[0] for r in conn.execute(
        "SELECT DISTINCT m.assertion_id FROM agent_memories m WHERE m.instance_key = %(i)s"
        " AND m.id IN (SELECT id FROM erase_memories) AND m.assertion_id IS NOT NULL"
        " AND m.assertion_id NOT IN (SELECT id FROM erase_assertions)", params).fetchall()]
    assertion_ids = [r[0] for r in conn.execute("SELECT id FROM erase_assertions").fetchall()]

    rows = conn.execute(GRAPH_EVIDENCE, params).fetchall()
    report.removed["agent_knowledge_evidence"] = len(rows)
    touched_items = {r[0] for r in rows if r[0]} | {r[1] for r in rows if r[1]} | {
        r[2] for r in rows if r[2]}
    for column, statement in UPDATES:
        report.updated[column] = conn.execute(statement, params).rowcount
    for table, statement in DELETES:
        report.removed[table] = conn.execute(statement, params).rowcount

    report.updated["agent_context_items.restored"] = kept.restore_assemblies(
        conn, params, places)
    report.updated["agent_memory_ingestion_outbox.enqueued"] = _reproject(
        conn, instance_key, reproject, uuid4())
    citing = {table: [r[0] for r in conn.execute(
        sql.SQL(_CITING).format(table=sql.Identifier(table)), params).fetchall()]
        for table in ("agent_knowledge_claims", "agent_knowledge_edges")}
    husks = touched_items | {r[0] for r in conn.execute(
        _CITED_ENTITIES, {"i": instance_key, "claims": citing["agent_knowledge_claims"],
                          "edges": citing["agent_knowledge_edges"]}).fetchall()}
    changes = _withdraw_graph_support(conn, instance_key, assertion_ids, memory_ids,
                                      touched_items)
    # Deletion really deletes: a claim or edge that only the person's statements
    # supported is gone with them, not kept superseded with their words in it; so is
    # an entity left unconnected (its label was their words).
    for table, ids in citing.items():
        report.removed[table] = report.removed.get(table, 0) + (conn.execute(
            sql.SQL(_UNSUPPORTED_DELETE).format(table=sql.Identifier(table)),
            {"i": instance_key, "ids": ids}).rowcount if ids else 0)
    report.removed["agent_knowledge_entities"] += kept.delete_graph_husks(
        conn, instance_key, husks)
    for column, statement in SCRUB:
        report.updated[column] = conn.execute(statement, params).rowcount
    redacted, runs, items = kept.redact_dreams(conn, instance_key, dreams, erased)
    report.updated["agent_memory_dreams.redacted"] = len(redacted)
    report.updated["agent_memory_dreams.items_redacted"] = items
    report.dream_ids += redacted
    report.dagster_run_ids = sorted(set(report.dagster_run_ids) | set(runs))
    for column, count in kept.pseudonymise(
            conn, params, kept.pseudonym(instance_key, params["u"])).items():
        report.updated[f"{column}.pseudonymised"] = count
    report.updated["agent_user_profiles.rederived"] = kept.rederive_profiles(
        conn, settings, params)
    # Last: deleting their rows above wrote their storage counter (0030) once more.
    report.removed["agent_storage_usage"] = conn.execute(
        "DELETE FROM agent_storage_usage WHERE instance_key = %(i)s AND user_id = %(u)s",
        params).rowcount
    # The words only the deleted chunks and claims held (their counts reached zero).
    report.removed["agent_memory_lexemes"] = lexemes - _lexeme_rows(conn, params)
    report.updated["graph.refs_removed"] = changes.refs_removed
    report.updated["agent_knowledge_claims.superseded"] = changes.claims_retracted
    report.updated["agent_knowledge_edges.superseded"] = changes.edges_retracted
    report.updated["agent_knowledge_entities.quarantined"] = changes.entities_quarantined
    report.id = conn.execute(
        """INSERT INTO agent_memory_erasures
               (instance_key, subject_hash, requested_by, removed, updated, total_removed,
                started_at, subject_kind)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id""",
        (instance_key, report.subject_hash, requested_by, Jsonb(report.removed),
         Jsonb(report.updated), report.total_removed, started,
         subject_kind or ("memory" if memory_audience else "user"))).fetchone()[0]
    if memory_audience:  # who could see the memory learns that it went (migration 0038)
        conn.execute(
            "INSERT INTO agent_memory_events"
            "       (instance_key, kind, audience_kind, audience_key, erasure_id, payload)"
            " VALUES (%s, 'memory.forgotten', %s, %s, %s, %s)",
            (instance_key, *memory_audience, report.id,
             Jsonb({"totalRemoved": report.total_removed})))


def _lexeme_rows(conn: psycopg.Connection, params: dict[str, str]) -> int:
    return conn.execute("SELECT count(*) FROM agent_memory_lexemes WHERE instance_key = %(i)s",
                        params).fetchone()[0]


def _fill_ledger(conn: psycopg.Connection, params: dict[str, str]) -> None:
    """Fill the source, assertion and memory sets until none grows (bounded: each round
    adds rows or ends the loop)."""
    while sum(conn.execute(statement, params).rowcount for statement in FILL_LEDGER):
        pass


# The entities that claims and edges citing removed rows connect (husk candidates).
_CITED_ENTITIES = """
    SELECT unnest(ARRAY[subject_entity_id, object_entity_id]) FROM agent_knowledge_claims
     WHERE instance_key = %(i)s AND id = ANY(%(claims)s::uuid[])
    UNION SELECT unnest(ARRAY[source_entity_id, target_entity_id]) FROM agent_knowledge_edges
     WHERE instance_key = %(i)s AND id = ANY(%(edges)s::uuid[])
"""

# Claims/edges citing a removed assertion or memory (before the refs are withdrawn).
_CITING = """
    SELECT x.id FROM {table} x
     WHERE x.instance_key = %(i)s
       AND EXISTS (SELECT 1 FROM jsonb_array_elements(x.source_refs) r
                    WHERE r.value ->> 'assertionId' IN (SELECT id::text FROM erase_assertions)
                       OR r.value ->> 'memoryId' IN (SELECT id::text FROM erase_memories))
"""
# ... of those, the ones the withdrawal left without any stable ref (so superseded).
_UNSUPPORTED_DELETE = """
    DELETE FROM {table} x
     WHERE x.instance_key = %(i)s AND x.id = ANY(%(ids)s::uuid[]) AND x.status <> 'active'
       AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(x.source_refs) r
                        WHERE r.value ? 'assertionId')
"""


def _reproject(conn: psycopg.Connection, instance_key: str, assertion_ids: list[UUID],
               erasure: UUID) -> int:
    """An ``assertion_projection`` job for each kept assertion left without a memory row
    (its projection was written from a removed source); how many. The job's key names the
    erasure: an earlier job of the same assertion state must not absorb it."""
    enqueued = 0
    for assertion_id in assertion_ids:
        left = conn.execute("SELECT 1 FROM agent_memories WHERE instance_key = %s"
                            " AND assertion_id = %s LIMIT 1", (instance_key, assertion_id))
        if left.fetchone() is None:
            enqueue(conn, instance_key, ASSERTION_PROJECTION, assertion_id,
                    f"{ASSERTION_PROJECTION}:{assertion_id}:erasure:{erasure}",
                    {"reason": "erasure"})
            enqueued += 1
    return enqueued


def _withdraw_graph_support(conn: psycopg.Connection, instance_key: str,
                            assertion_ids: list[UUID], memory_ids: list[UUID],
                            touched_items: set[UUID]) -> GraphChanges:
    """Refs citing removed assertions or memories leave the other audiences' claims and
    edges (``graph.retract``: unsupported ones superseded, orphans quarantined), and the
    entities that lost evidence rows are quarantined when nothing connects them now."""
    changes = retract.retract_assertions(conn, instance_key, assertion_ids)
    if memory_ids:
        touched = retract.remove_refs(conn, instance_key,
                                      [{"memoryId": str(m)} for m in memory_ids],
                                      supported="current", changes=changes)
    else:
        touched = set()
    entities = set(touched)
    if touched_items:
        found = conn.execute(
            """SELECT id FROM agent_knowledge_entities
                WHERE instance_key = %(i)s AND id = ANY(%(x)s)
               UNION SELECT unnest(ARRAY[subject_entity_id, object_entity_id])
                 FROM agent_knowledge_claims WHERE instance_key = %(i)s AND id = ANY(%(x)s)
               UNION SELECT unnest(ARRAY[source_entity_id, target_entity_id])
                 FROM agent_knowledge_edges WHERE instance_key = %(i)s AND id = ANY(%(x)s)""",
            {"i": instance_key, "x": list(touched_items)}).fetchall()
        entities |= {r[0] for r in found if r[0] is not None}
    changes.entities_quarantined += retract.quarantine_orphans(
        conn, instance_key, entities, "orphaned_by_erasure")
    return changes
