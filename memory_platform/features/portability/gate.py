"""What an import may write besides its rows' own guards: memberships and review states.

An export file is a claim like any request (docs/security.md): whoever wrote it chooses
every byte, a checksum included. So an import never lets a file grant access to what the
target already holds, nor activate what a person of the target has not approved:

* **Sessions.** The rows of a session (state, runs, items, summaries, participants, context
  items) are written only for a session the file brings (it has history in the file) and
  that nobody uses in the target (no participant, state, run, item or summary there). A
  participant row of a session the file does not bring, or of one already in use, would make
  its user a reader of someone else's conversation; it is refused and counted.
* **Channels.** A ``channel_member`` row is written only for a channel the file brings (rows
  of its audience or in its thread or room) and that the target does not know yet (no
  member, memory, item or run there).
* ``allow_existing`` (``--allow-existing-memberships``) takes the file's session and
  membership rows as they are: for an operator restoring into an instance they trust the file
  for.
* **Review states** (``trust_states=False``, the default): an imported assertion the file
  says is active or approved becomes a ``candidate`` waiting for review, its sources are
  ``imported`` (the Dream policy judges evidence by its weakest source), and the rows that
  restate an approval are not imported: review decisions and history (another instance's
  people decided them) and the knowledge graph (rebuilt from assertions once they are
  approved, migration 0020). A restore that should come back exactly as it was exported says
  ``trust_states=True`` (``--trust-file-states``).

The decisions are taken once, in the import's transaction, before its first write; the
sessions it takes are locked with the advisory lock a claim takes (membership.py), so no
session starts being used between the decision and the import's commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg

from memory_platform.features.portability.format import SESSION_KINDS, Kind
from memory_platform.features.portability.rewrite import Rewriter
from memory_platform.features.portability.verify import FileSummary
from memory_platform.shared.ledger.recall import APPROVED_REVIEW_STATES
from memory_platform.shared.membership import session_lock_key

# Kinds that restate another instance's approvals: kept only with trust_states.
APPROVAL_KINDS = ("review", "history", "entity", "claim", "edge", "graph_evidence",
                  "entity_embedding", "claim_embedding")

NOT_BROUGHT_SESSION = "session rows of a session the file brings no history of"
USED_SESSION = "session rows of a session already in use in the target"
NOT_BROUGHT_CHANNEL = "channel memberships of a channel the file brings no rows of"
USED_CHANNEL = "channel memberships of a channel already in use in the target"
REGATED = ("review decisions, history and graph rows (re-gated: the assertions wait for "
           "review; --trust-file-states keeps them)")

_USED_SESSIONS = """
    SELECT session_key FROM agent_session_participants
     WHERE instance_key = %(i)s AND session_key = ANY(%(k)s)
    UNION SELECT session_key FROM agent_session_state
     WHERE instance_key = %(i)s AND session_key = ANY(%(k)s)
    UNION SELECT session_key FROM agent_session_runs
     WHERE instance_key = %(i)s AND session_key = ANY(%(k)s)
    UNION SELECT session_key FROM agent_context_messages
     WHERE instance_key = %(i)s AND session_key = ANY(%(k)s)
    UNION SELECT session_key FROM agent_context_summaries
     WHERE instance_key = %(i)s AND session_key = ANY(%(k)s)"""
_USED_CHANNELS = """
    SELECT channel_key FROM agent_channel_members
     WHERE instance_key = %(i)s AND channel_key = ANY(%(k)s)
    UNION SELECT audience_key FROM agent_memories
     WHERE instance_key = %(i)s AND visibility_scope = 'channel' AND audience_key = ANY(%(k)s)
    UNION SELECT channel_thread_key FROM agent_memories
     WHERE instance_key = %(i)s AND channel_thread_key = ANY(%(k)s)
    UNION SELECT group_room_id FROM agent_memories
     WHERE instance_key = %(i)s AND group_room_id = ANY(%(k)s)
    UNION SELECT channel_thread_key FROM agent_context_messages
     WHERE instance_key = %(i)s AND channel_thread_key = ANY(%(k)s)
    UNION SELECT channel_thread_key FROM agent_session_runs
     WHERE instance_key = %(i)s AND channel_thread_key = ANY(%(k)s)
    UNION SELECT group_room_id FROM agent_session_runs
     WHERE instance_key = %(i)s AND group_room_id = ANY(%(k)s)"""


@dataclass
class Gate:
    """The import's decisions about sessions, channels and review states."""

    allow_existing: bool = False
    trust_states: bool = False
    sessions: dict[str, bool] = field(default_factory=dict)   # brought -> free in target
    channels: dict[str, bool] = field(default_factory=dict)

    def refusal(self, kind: Kind, row: dict[str, Any]) -> str | None:
        """Why ``row`` (rewritten into the target) is not imported; None: it may be."""
        if not self.trust_states and kind.name in APPROVAL_KINDS:
            return REGATED
        if self.allow_existing:
            return None
        if kind.name in SESSION_KINDS:
            free = self.sessions.get(row.get("session_key"))
            if free is None:
                return NOT_BROUGHT_SESSION
            return None if free else USED_SESSION
        if kind.name == "channel_member":
            free = self.channels.get(row.get("channel_key"))
            if free is None:
                return NOT_BROUGHT_CHANNEL
            return None if free else USED_CHANNEL
        return None

    def regate(self, kind: Kind, row: dict[str, Any]) -> None:
        """Without trust_states: what the file says is approved waits for review."""
        if self.trust_states:
            return
        if kind.name == "assertion" and (row.get("status") == "active"
                                         or row.get("review_state") in APPROVED_REVIEW_STATES):
            row["status"], row["review_state"] = "candidate", "pending"
        elif kind.name == "source" and "trust_class" in row:
            row["trust_class"] = "imported"


def open_gate(conn: psycopg.Connection, target: str, summary: FileSummary,
              rewriter: Rewriter, *, allow_existing: bool, trust_states: bool) -> Gate:
    """Decide, in the import's transaction, which brought sessions and channels are free in
    ``target``; lock the free sessions until the transaction ends."""
    gate = Gate(allow_existing=allow_existing, trust_states=trust_states)
    sessions = sorted(summary.sessions)
    channels = sorted({rewriter.channels.get(c, c) for c in summary.channels})
    for session in sessions:   # sorted: two imports take the locks in one order
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                     (session_lock_key(target, session),))
    used = {r[0] for r in conn.execute(_USED_SESSIONS, {"i": target, "k": sessions})}
    gate.sessions = {s: s not in used for s in sessions}
    used = {r[0] for r in conn.execute(_USED_CHANNELS, {"i": target, "k": channels})}
    gate.channels = {c: c not in used for c in channels}
    return gate
