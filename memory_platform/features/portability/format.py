"""The memory-platform export format (docs/export-format.md): JSON Lines, one record a line.

Line 1 is a ``header`` record (format name, version, the exported instance and audience, the
embedding generation of the vectors it carries), the last line a ``footer`` (counts per kind;
a file without it was cut short). Every other line is ``{"kind": K, "row": {...}}``: one row
of the table of kind K, its columns by name as PostgreSQL's ``to_jsonb`` writes them (uuids
and timestamps as strings, vectors as ``"[x,y,...]"``). Kinds come in the order of
:data:`KINDS`, so a row's references are in the file before it; the few references that can
point forward (a source's memory, a memory superseded by a later one, an assertion's revision
links) are left out of their row and follow at the end as ``link`` records.

Rows keep their ids (UUIDs): importing a file twice adds nothing. Tables whose ids are
sequence numbers (review decisions, history, chunks) are exported without them and
recognised on import by their natural key (:attr:`Kind.natural_key`).

The footer carries the SHA-256 of every byte before it and the line count, so an import can
tell a cut, truncated or altered file from a whole one before it writes anything
(portability/verify.py).
"""

from __future__ import annotations

from dataclasses import dataclass

FORMAT = "memory-platform-export"
VERSION = 1

# Who a row belongs to, for an audience export and for rewriting on import:
# "own": the row carries (kind_column, key_column) itself; "parent": it belongs to the
# audience of the row its ``parent`` column names (``parent_kind``); "session": a session
# row, exported with a private audience (its user) or a channel audience (its thread);
# "user": a user registry row (private: that user; team/workspace: every user).


@dataclass(frozen=True)
class Kind:
    """One record kind: its table and how it is exported, matched and rewritten."""

    name: str
    table: str
    order_by: str
    audience: str                      # own | parent | session | user
    kind_column: str | None = None     # audience_kind or visibility_scope
    parent: str | None = None          # the column naming the owning row (audience "parent")
    parent_kind: str | None = None     # the kind of that row
    skip: tuple[str, ...] = ()         # never exported: derived on import (triggers, writer)
    links: tuple[str, ...] = ()        # forward references: exported as ``link`` records
    natural_key: tuple[str, ...] = ()  # identity of a row without a stable id (dedup)
    user_columns: tuple[str, ...] = ()     # user ids, rewritten by a private -> private map
    owner_column: str | None = None    # the owner a private audience requires
    channel_columns: tuple[str, ...] = ()  # channel thread keys, rewritten with the audience
    vector: bool = False               # carries ``embedding`` (only with --with-embeddings)
    # (column, kind): rows this row attaches to; an import writes the row only when it added
    # each named row itself (a file never attaches rows to what the target already holds)
    refs: tuple[tuple[str, str], ...] = ()


KINDS: tuple[Kind, ...] = (
    Kind("dream", "agent_memory_dreams", "started_at, id", "own", "audience_kind"),
    Kind("source", "agent_memory_sources", "created_at, id", "own", "audience_kind",
         links=("memory_id",), user_columns=("owner_user_id",), owner_column="owner_user_id"),
    Kind("assertion", "agent_memory_assertions", "created_at, id", "own", "audience_kind",
         links=("revision_of", "superseded_by"), user_columns=("owner_user_id",),
         owner_column="owner_user_id"),
    Kind("memory", "agent_memories", "created_at, id", "own", "visibility_scope",
         links=("superseded_by_memory_id", "previous_memory_id"), user_columns=("user_id",),
         owner_column="user_id", channel_columns=("channel_thread_key", "group_room_id")),
    Kind("chunk", "agent_memory_chunks", "id", "parent",
         parent="memory_id", parent_kind="memory",
         skip=("id", "visibility_scope", "audience_key", "owner_user_id", "recallable",
               "context_tsv", "generation_id", "context_memory_ids"),
         natural_key=("memory_id", "chunk_index"), vector=True, refs=(("memory_id", "memory"),)),
    Kind("evidence", "agent_memory_assertion_evidence", "created_at, id", "own",
         "audience_kind", refs=(("assertion_id", "assertion"), ("source_id", "source"))),
    Kind("review", "agent_memory_assertion_reviews", "created_at, id", "parent",
         parent="assertion_id", parent_kind="assertion", skip=("id",),
         natural_key=("assertion_id", "decision", "reviewer_kind", "reason_code",
                      "created_at"), refs=(("assertion_id", "assertion"),)),
    Kind("history", "agent_memory_assertion_history", "recorded_at, id", "parent",
         parent="assertion_id", parent_kind="assertion", skip=("id",),
         natural_key=("assertion_id", "status", "review_state", "recorded_at"),
         refs=(("assertion_id", "assertion"),)),
    Kind("conflict", "agent_memory_assertion_conflicts", "created_at, id", "own",
         "audience_kind", refs=(("assertion_id", "assertion"),
                                ("conflicting_assertion_id", "assertion"))),
    Kind("assertion_embedding", "agent_memory_assertion_embeddings", "assertion_id",
         "parent", parent="assertion_id", parent_kind="assertion", skip=("generation_id",),
         vector=True, refs=(("assertion_id", "assertion"),)),
    Kind("relation", "agent_memory_relations", "created_at, id", "parent",
         parent="from_memory_id", parent_kind="memory",
         refs=(("from_memory_id", "memory"), ("to_memory_id", "memory"))),
    Kind("entity", "agent_knowledge_entities", "created_at, id", "own", "visibility_scope"),
    Kind("claim", "agent_knowledge_claims", "created_at, id", "own", "visibility_scope"),
    Kind("edge", "agent_knowledge_edges", "created_at, id", "own", "visibility_scope"),
    Kind("graph_evidence", "agent_knowledge_evidence", "created_at, id", "parent",
         parent="coalesce(entity_id, claim_id, edge_id)", parent_kind="graph",
         refs=(("entity_id", "entity"), ("claim_id", "claim"), ("edge_id", "edge"))),
    Kind("entity_embedding", "agent_knowledge_entity_embeddings", "entity_id", "parent",
         parent="entity_id", parent_kind="entity", skip=("generation_id",), vector=True,
         refs=(("entity_id", "entity"),)),
    Kind("claim_embedding", "agent_knowledge_claim_embeddings", "claim_id", "parent",
         parent="claim_id", parent_kind="claim", skip=("generation_id",), vector=True,
         refs=(("claim_id", "claim"),)),
    Kind("session", "agent_session_state", "created_at, session_key", "session",
         user_columns=("user_id",)),
    Kind("session_run", "agent_session_runs", "created_at, session_key, run_index",
         "session", user_columns=("user_id",),
         channel_columns=("channel_thread_key", "group_room_id")),
    Kind("session_participant", "agent_session_participants", "created_at, session_key",
         "session", user_columns=("user_id",)),
    Kind("session_item", "agent_context_messages", "session_key, seq", "session",
         user_columns=("user_id",), channel_columns=("channel_thread_key",)),
    Kind("session_summary", "agent_context_summaries", "created_at, id", "session",
         user_columns=("user_id",), channel_columns=("channel_thread_key",)),
    Kind("summary_item", "agent_context_summary_messages", "summary_id, message_id",
         "session"),
    Kind("summary_parent", "agent_context_summary_parents",
         "parent_summary_id, child_summary_id", "session"),
    Kind("context_item", "agent_context_items", "session_key, position", "session"),
    Kind("channel_member", "agent_channel_members", "created_at, channel_key, user_id",
         "user", user_columns=("user_id",), channel_columns=("channel_key",)),
    Kind("user", "agent_users", "created_at, user_id", "user", user_columns=("user_id",)),
    Kind("user_preference", "agent_user_preferences", "created_at, user_id", "user",
         user_columns=("user_id",)),
)

BY_NAME = {kind.name: kind for kind in KINDS}
ORDER = {kind.name: position for position, kind in enumerate(KINDS)}

# A forward reference, set on import once both rows exist (only where still unset).
LINK = "link"
HEADER = "header"
FOOTER = "footer"
# The kind of row each link column names (its ``value``).
LINK_TARGETS = {"memory_id": "memory", "superseded_by_memory_id": "memory",
                "previous_memory_id": "memory", "revision_of": "assertion",
                "superseded_by": "assertion"}
# The kinds whose ids an import records as it adds them: the rows others attach to (refs,
# links).
ADDED_KINDS = ("source", "assertion", "memory", "entity", "claim", "edge")
# The session kinds (audience "session"): a session's rows, each carrying its session_key.
SESSION_KINDS = tuple(kind.name for kind in KINDS if kind.audience == "session")

# Bounds of one line, so a hostile file costs bounded memory and no recursion: the longest
# row the platform writes is far below the size (a 4 MiB request body at most, vectors of a
# few thousand floats), and no row nests JSON deeper than a few levels.
MAX_LINE_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 64


def footer(counts: dict[str, int], links: int, lines: int, sha256: str) -> dict:
    """The last line: counts per kind, the line count (footer included) and the SHA-256 of
    every byte before the footer line."""
    return {"kind": FOOTER, "counts": counts, "links": links, "lines": lines,
            "sha256": sha256}


def header(instance_key: str, audience: tuple[str, str] | None, *, schema_version: int,
           exported_at: str, embedding: dict | None) -> dict:
    """The first line of an export."""
    return {
        "kind": HEADER, "format": FORMAT, "version": VERSION,
        "schema_version": schema_version, "exported_at": exported_at,
        "instance_key": instance_key,
        "audience": {"kind": audience[0], "key": audience[1]} if audience else None,
        "embedding": embedding,
    }
