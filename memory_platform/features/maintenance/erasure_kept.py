"""The rows an erasure keeps that quoted or named the person (``erasure.py``'s rules
*redact*, *pseudonymise* and *re-derive*): each function runs inside ``erase_user``'s
transaction, reads its ``erase_*`` id sets, and answers counts (never content).

- :func:`erased_of`: what identifies the person in a document (removed ids, their user id,
  the texts of their removed rows), read BEFORE the deletes;
- :func:`dream_candidates` (before the deletes) and :func:`redact_dreams` (after): the Dream
  rows of other audiences whose JSON cites or quotes the person get those items replaced
  (``redaction.py``); the affected Dagster run ids are reported for the Dagster cleanup;
- :func:`pseudonymise`: a kept decision (review, wiki decision, conflict resolution, the
  name of who added a member or changed a setting) keeps its record, the person's id becomes
  ``erased:<hash>`` with a random salt per erasure (never stored), and their note goes;
- :func:`delete_graph_husks`: entities the withdrawal left unconnected and not active (their
  labels were the person's words) are deleted, not left quarantined;
- :func:`rederive_profiles`: another user's stored profile that lists a removed or no longer
  active item is rebuilt from what remains (``profiles.py``);
- :func:`summary_places` (before) and :func:`restore_assemblies` (after): a summary of
  another person's session that covered one of the person's turns goes (it is text derived
  from them); what it stood for and stays takes its place in that session's assembly.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterable
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.features.maintenance.profiles import refresh_profiles
from memory_platform.features.maintenance.redaction import REDACTED_TEXT, Erased, redact
from memory_platform.foundation.settings import Settings

_TEXTS = """
    SELECT content FROM agent_memories WHERE instance_key = %(i)s
       AND id IN (SELECT id FROM erase_memories)
    UNION ALL SELECT content FROM agent_memory_sources WHERE instance_key = %(i)s
       AND id IN (SELECT id FROM erase_sources)
    UNION ALL SELECT assertion_text FROM agent_memory_assertions WHERE instance_key = %(i)s
       AND id IN (SELECT id FROM erase_assertions)
    UNION ALL SELECT excerpt FROM agent_memory_assertion_evidence WHERE instance_key = %(i)s
       AND (assertion_id IN (SELECT id FROM erase_assertions)
            OR source_id IN (SELECT id FROM erase_sources))
    UNION ALL SELECT content FROM agent_context_messages WHERE instance_key = %(i)s
       AND id IN (SELECT id FROM erase_messages)
    UNION ALL SELECT content FROM agent_context_summaries WHERE instance_key = %(i)s
       AND id IN (SELECT id FROM erase_summaries)
"""


def erased_of(conn: psycopg.Connection, params: dict[str, str]) -> Erased:
    """The person as a document may name them (read before the deletes)."""
    ids = {r[0] for r in conn.execute("SELECT id FROM erase_refs").fetchall()}
    texts = [r[0] for r in conn.execute(_TEXTS, params).fetchall() if r[0]]
    return Erased(ids=ids, user_id=params["u"], texts=texts)


# Dreams of other audiences that read the person's rows (their audiences), or whose JSON
# cites a removed row or names the person anywhere (a consolidation sweep is recorded on
# the Dream of another partition). No time bound: the graph and consolidation steps write
# to a Dream's row after it finished. Cost (measured): 2,000 Dreams of one audience with
# 33 MB of JSON make an erasure take 7 s.
_DREAMS = """
    SELECT d.id FROM agent_memory_dreams d
     WHERE d.instance_key = %(i)s AND d.id NOT IN (SELECT id FROM erase_dreams)
       AND ((d.audience_kind, d.audience_key) IN (
               SELECT visibility_scope, audience_key FROM agent_memories
                WHERE instance_key = %(i)s AND id IN (SELECT id FROM erase_memories)
               UNION SELECT audience_kind, audience_key FROM agent_memory_sources
                WHERE instance_key = %(i)s AND id IN (SELECT id FROM erase_sources)
               UNION SELECT audience_kind, audience_key FROM agent_memory_assertions
                WHERE instance_key = %(i)s AND id IN (SELECT id FROM erase_assertions))
            OR EXISTS (SELECT 1 FROM jsonb_path_query(
                           jsonb_build_array(d.stats_json, d.proposals_json, d.diagnostics),
                           'strict $.** ? (@.type() == "string")') AS v(s)
                        WHERE v.s #>> '{}' IN (SELECT id FROM erase_refs)
                           OR strpos(v.s #>> '{}', %(u)s) > 0))
"""


def dream_candidates(conn: psycopg.Connection, params: dict[str, str]) -> list[UUID]:
    """The kept Dreams that may quote the person (read before the deletes)."""
    return [r[0] for r in conn.execute(_DREAMS, params).fetchall()]


def erased_dream_runs(conn: psycopg.Connection
                      ) -> tuple[list[UUID], list[str], list[str]]:
    """Ids, Dagster run ids and partition keys of the person's own (private) Dreams, before
    they go."""
    rows = conn.execute("SELECT id, dagster_run_id, partition_key FROM agent_memory_dreams"
                        " WHERE id IN (SELECT id FROM erase_dreams)").fetchall()
    return ([r[0] for r in rows], sorted({r[1] for r in rows if r[1]}),
            sorted({r[2] for r in rows}))


def redact_dreams(conn: psycopg.Connection, instance_key: str, dream_ids: Iterable[UUID],
                  erased: Erased) -> tuple[list[UUID], list[str], int]:
    """Redact the person out of each Dream's ``stats_json``, ``proposals_json``,
    ``diagnostics`` and ``error``; answers the ids of the Dreams changed, their Dagster run
    ids and how many items were replaced."""
    changed: list[UUID] = []
    runs: list[str] = []
    items = 0
    for dream_id in dream_ids:
        row = conn.execute(
            "SELECT stats_json, proposals_json, diagnostics, error, dagster_run_id"
            " FROM agent_memory_dreams WHERE instance_key = %s AND id = %s FOR UPDATE",
            (instance_key, dream_id)).fetchone()
        if row is None:
            continue
        stats, n1 = redact(row[0], erased)
        proposals, n2 = redact(row[1], erased)
        diagnostics, n3 = redact(row[2], erased)
        error = REDACTED_TEXT if row[3] and erased.names(row[3]) else row[3]
        n = n1 + n2 + n3 + (error != row[3])
        if not n:
            continue
        conn.execute(
            "UPDATE agent_memory_dreams SET stats_json = %s, proposals_json = %s,"
            " diagnostics = %s, error = %s WHERE instance_key = %s AND id = %s",
            (Jsonb(stats), Jsonb(proposals) if proposals is not None else None,
             Jsonb(diagnostics), error, instance_key, dream_id))
        changed.append(dream_id)
        items += n
        if row[4]:
            runs.append(row[4])
    return changed, runs, items


def pseudonym(instance_key: str, user_id: str) -> str:
    """``erased:<16 hex>``: stable within one erasure (a random salt, never stored), so the
    kept decisions of one person still read as one reviewer, and unlinkable to them."""
    salt = secrets.token_bytes(16)
    digest = hashlib.sha256(salt + json.dumps([instance_key, user_id]).encode()).hexdigest()
    return f"erased:{digest[:16]}"


# (table, column naming who decided or acted, what else goes with the person: their words)
_ACTORS = (
    ("agent_memory_assertion_reviews", "reviewer_id", "note = NULL"),
    ("wiki_change_proposals", "decided_by", "decision_reason = NULL"),
    ("agent_memory_assertion_conflicts", "resolved_by", None),
    ("agent_channel_members", "added_by", None),
    ("agent_users", "created_by", None),
    ("agent_user_preferences", "changed_by", None),
    ("agent_memory_webhooks", "created_by", None),
)
# The actor column holds the user id, or a prefixed form of it ("user:<id>").
_IS_ACTOR = "({col} = %(u)s OR right({col}, length(%(u)s) + 1) = ':' || %(u)s)"


def pseudonymise(conn: psycopg.Connection, params: dict[str, str],
                 name: str) -> dict[str, int]:
    """Kept rows naming the person as the one who decided or acted now name ``name``; their
    notes and reasons go. Counts per ``table.column``."""
    counts = {}
    for table, column, also in _ACTORS:
        sets = sql.SQL("{col} = %(p)s").format(col=sql.Identifier(column))
        if also:
            sets = sql.SQL("{}, {}").format(sets, sql.SQL(also))
        where = sql.SQL(_IS_ACTOR).format(col=sql.Identifier(column))
        counts[f"{table}.{column}"] = conn.execute(
            sql.SQL("UPDATE {t} SET {sets} WHERE instance_key = %(i)s AND {where}").format(
                t=sql.Identifier(table), sets=sets, where=where),
            {**params, "p": name}).rowcount
    return counts


def delete_graph_husks(conn: psycopg.Connection, instance_key: str,
                       entity_ids: Iterable[UUID]) -> int:
    """Delete those of ``entity_ids`` that are not active and that no claim or edge names
    (their vectors and evidence go by cascade); how many."""
    ids = list(set(entity_ids))
    if not ids:
        return 0
    return conn.execute(
        """DELETE FROM agent_knowledge_entities e
            WHERE e.instance_key = %(i)s AND e.id = ANY(%(ids)s) AND e.status <> 'active'
              AND NOT EXISTS (SELECT 1 FROM agent_knowledge_claims c
                               WHERE c.instance_key = e.instance_key
                                 AND e.id IN (c.subject_entity_id, c.object_entity_id))
              AND NOT EXISTS (SELECT 1 FROM agent_knowledge_edges x
                               WHERE x.instance_key = e.instance_key
                                 AND e.id IN (x.source_entity_id, x.target_entity_id))""",
        {"i": instance_key, "ids": ids}).rowcount


# Stored profiles listing an item that was removed or is no longer active.
_STALE_PROFILES = """
    SELECT p.user_id FROM agent_user_profiles p
     WHERE p.instance_key = %(i)s AND EXISTS (
           SELECT 1 FROM jsonb_array_elements(p.static_facts || p.dynamic_context) it
            WHERE it ->> 'id' IN (SELECT id FROM erase_refs)
               OR (it ->> 'kind' = 'memory' AND NOT EXISTS (
                      SELECT 1 FROM agent_memories m WHERE m.instance_key = p.instance_key
                         AND m.id::text = it ->> 'id' AND m.memory_state = 'active'))
               OR (it ->> 'kind' = 'claim' AND NOT EXISTS (
                      SELECT 1 FROM agent_knowledge_claims c WHERE c.instance_key = p.instance_key
                         AND c.id::text = it ->> 'id' AND c.status = 'active')))
"""


def rederive_profiles(conn: psycopg.Connection, settings: Settings,
                      params: dict[str, str]) -> int:
    """Rebuild the other users' stored profiles that list a removed or withdrawn item;
    how many."""
    users = [r[0] for r in conn.execute(_STALE_PROFILES, params).fetchall()
             if r[0] != params["u"]]
    return refresh_profiles(conn, settings, params["i"], users) if users else 0


# Where a removed summary stood in a kept session's assembly (read before the deletes).
_SUMMARY_PLACES = """
    SELECT i.session_key, i.position, i.summary_id FROM agent_context_items i
     WHERE i.instance_key = %(i)s AND i.summary_id IN (SELECT id FROM erase_summaries)
       AND i.session_key NOT IN (SELECT session_key FROM erase_sessions)
"""
# What each removed summary stood for that stays: kept summaries below it (through removed
# ones) and kept raw messages it covered, each with the first seq it covers.
_STAND_INS = """
    WITH RECURSIVE below(root, id) AS (
        SELECT r, r FROM unnest(%(roots)s::uuid[]) AS t(r)
        UNION
        SELECT b.root, p.child_summary_id FROM agent_context_summary_parents p
          JOIN below b ON p.parent_summary_id = b.id
         WHERE p.instance_key = %(i)s AND b.id IN (SELECT id FROM erase_summaries))
    SELECT b.root, 'summary', NULL::uuid, b.id,
           (SELECT coalesce(min(m.seq), 0) FROM agent_context_summary_messages sm
              JOIN agent_context_messages m ON m.id = sm.message_id
             WHERE sm.summary_id = b.id)
      FROM below b WHERE b.id NOT IN (SELECT id FROM erase_summaries)
    UNION ALL
    SELECT b.root, 'message', m.id, NULL::uuid, m.seq
      FROM below b
      JOIN agent_context_summary_messages sm ON sm.summary_id = b.id
      JOIN agent_context_messages m ON m.id = sm.message_id
     WHERE b.id IN (SELECT id FROM erase_summaries)
       AND m.id NOT IN (SELECT id FROM erase_messages)
"""


def summary_places(conn: psycopg.Connection, params: dict[str, str]
                   ) -> dict[str, list[tuple[tuple[int, int, int], str, UUID | None,
                                             UUID | None]]]:
    """Per kept session, what stands in for its removed summaries: (order key, kind,
    message id, summary id), the order key placing it where the summary stood. Read before
    the deletes (the summary links go with the summaries)."""
    places: dict[str, dict[UUID, int]] = {}
    for session, position, summary in conn.execute(_SUMMARY_PLACES, params).fetchall():
        places.setdefault(session, {})[summary] = position
    out: dict[str, list[tuple[tuple[int, int, int], str, UUID | None, UUID | None]]] = {}
    for session, removed in places.items():
        out[session] = [((removed[root], 1, seq), kind, message, summary)
                        for root, kind, message, summary, seq in conn.execute(
                            _STAND_INS, {**params, "roots": list(removed)}).fetchall()]
    return out


def restore_assemblies(conn: psycopg.Connection, params: dict[str, str],
                       places: dict[str, list[tuple[tuple[int, int, int], str, UUID | None,
                                                    UUID | None]]]) -> int:
    """Re-derive the context assembly of the kept sessions whose summaries went (they
    covered one of the person's turns): what such a summary stood for and stays (the other
    people's raw turns, kept summaries below it) takes its place, in order, so nobody's
    context loses their own turns. Runs after the deletes; answers the items put back."""
    restored = 0
    for session, stand_ins in places.items():
        current = conn.execute(
            "SELECT position, item_kind, message_id, summary_id FROM agent_context_items"
            " WHERE instance_key = %(i)s AND session_key = %(s)s", {**params, "s": session}
        ).fetchall()
        standing = {r[2] or r[3] for r in current}
        order = [((r[0], 0, 0), r[1], r[2], r[3]) for r in current]
        for key, kind, message, summary in stand_ins:
            if (message or summary) in standing:
                continue
            standing.add(message or summary)
            order.append((key, kind, message, summary))
            restored += 1
        order.sort(key=lambda item: item[0])
        conn.execute("DELETE FROM agent_context_items WHERE instance_key = %(i)s"
                     " AND session_key = %(s)s", {**params, "s": session})
        for position, (_, kind, message, summary) in enumerate(order):
            conn.execute(
                "INSERT INTO agent_context_items (instance_key, session_key, position,"
                " item_kind, message_id, summary_id) VALUES (%s, %s, %s, %s, %s, %s)",
                (params["i"], session, position, kind, message, summary))
    return restored
