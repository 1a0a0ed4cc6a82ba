"""The statements of an erasure (:mod:`.erasure`), as data: the id sets of one erasure and
the statements that fill them, the DELETE of each table in order (children before the rows
they cite), the kept rows whose link or name is cleared, and the scrub of subject refs. Each
statement takes ``%(i)s`` (the instance) and ``%(u)s`` (the user); the rule behind each is
the table in :mod:`.erasure`'s docstring."""

from __future__ import annotations

from psycopg import sql

# The id sets of one erasure, as temporary tables of the transaction.
SETS = ("erase_sessions (session_key text PRIMARY KEY)",
        "erase_messages (id uuid PRIMARY KEY)",
        "erase_summaries (id uuid PRIMARY KEY)",
        "erase_sources (id uuid PRIMARY KEY)",
        "erase_assertions (id uuid PRIMARY KEY)",
        "erase_memories (id uuid PRIMARY KEY)",
        "erase_dreams (id uuid PRIMARY KEY)",
        "erase_entities (id uuid PRIMARY KEY)",
        "erase_claims (id uuid PRIMARY KEY)",
        "erase_edges (id uuid PRIMARY KEY)",
        # every removed row's id as text: what a JSON document or a ref list cites
        "erase_refs (id text PRIMARY KEY)")

# Filling the sets (each statement takes %(i)s = instance, %(u)s = user).
FILL = [
    # Their sessions: owned by them, or whose state names them.
    """INSERT INTO erase_sessions
      SELECT session_key FROM agent_session_participants
       WHERE instance_key = %(i)s AND user_id = %(u)s AND role = 'owner'
      UNION
      SELECT session_key FROM agent_session_state
       WHERE instance_key = %(i)s AND user_id = %(u)s""",
    """INSERT INTO erase_messages
      SELECT m.id FROM agent_context_messages m
       WHERE m.instance_key = %(i)s
         AND (m.user_id = %(u)s OR m.session_key IN (SELECT session_key FROM erase_sessions))""",
    # Summaries of their sessions, their own, those covering a removed message, and every
    # summary above one of these.
    """INSERT INTO erase_summaries
      WITH RECURSIVE hit(id) AS (
          SELECT s.id FROM agent_context_summaries s
           WHERE s.instance_key = %(i)s
             AND (s.user_id = %(u)s OR s.session_key IN (SELECT session_key FROM erase_sessions)
                  OR EXISTS (SELECT 1 FROM agent_context_summary_messages sm
                              WHERE sm.summary_id = s.id
                                AND sm.message_id IN (SELECT id FROM erase_messages)))
          UNION
          SELECT p.parent_summary_id FROM agent_context_summary_parents p
            JOIN hit ON p.child_summary_id = hit.id
           WHERE p.instance_key = %(i)s)
      SELECT id FROM hit""",
    """INSERT INTO erase_dreams
      SELECT id FROM agent_memory_dreams
       WHERE instance_key = %(i)s AND audience_kind = 'private' AND audience_key = %(u)s""",
    """INSERT INTO erase_entities
      SELECT id FROM agent_knowledge_entities
       WHERE instance_key = %(i)s AND visibility_scope = 'private' AND audience_key = %(u)s""",
    """INSERT INTO erase_claims
      SELECT id FROM agent_knowledge_claims
       WHERE instance_key = %(i)s AND visibility_scope = 'private' AND audience_key = %(u)s""",
    """INSERT INTO erase_edges
      SELECT id FROM agent_knowledge_edges
       WHERE instance_key = %(i)s AND visibility_scope = 'private' AND audience_key = %(u)s""",
    # The entity standing for the person (linked to their user record), in every audience,
    # with the claims and edges about it: its label is their name or id.
    """INSERT INTO erase_entities
      SELECT id FROM agent_knowledge_entities
       WHERE instance_key = %(i)s AND linked_record_id = %(u)s
         AND linked_record_type IN ('userId', 'user', 'person')
      ON CONFLICT DO NOTHING""",
    """INSERT INTO erase_claims
      SELECT id FROM agent_knowledge_claims
       WHERE instance_key = %(i)s
         AND (subject_entity_id IN (SELECT id FROM erase_entities)
              OR object_entity_id IN (SELECT id FROM erase_entities))
      ON CONFLICT DO NOTHING""",
    """INSERT INTO erase_edges
      SELECT id FROM agent_knowledge_edges
       WHERE instance_key = %(i)s
         AND (source_entity_id IN (SELECT id FROM erase_entities)
              OR target_entity_id IN (SELECT id FROM erase_entities))
      ON CONFLICT DO NOTHING""",
]

# Sources, assertions and memories depend on each other (a summary's memory has a source,
# an assertion only that source supports has a projection memory, ...): filled again until
# none grows (each statement only adds).
FILL_LEDGER = [
    """INSERT INTO erase_sources
       SELECT s.id FROM agent_memory_sources s
        WHERE s.instance_key = %(i)s
          AND (s.owner_user_id = %(u)s OR (s.audience_kind = 'private' AND s.audience_key = %(u)s)
              OR s.session_key IN (SELECT session_key FROM erase_sessions)
              OR EXISTS (SELECT 1 FROM agent_memories m
                          WHERE m.instance_key = %(i)s AND m.user_id = %(u)s
                            AND (m.id = s.memory_id OR m.source_id = s.id))
              OR s.memory_id IN (SELECT id FROM erase_memories))
       ON CONFLICT DO NOTHING""",
    # Private assertions; elsewhere those no kept source supports (and, without any
    # evidence, those they own).
    """INSERT INTO erase_assertions
       SELECT a.id FROM agent_memory_assertions a
        WHERE a.instance_key = %(i)s
          AND ((a.audience_kind = 'private' AND a.audience_key = %(u)s)
              OR ((EXISTS (SELECT 1 FROM agent_memory_assertion_evidence e
                            WHERE e.assertion_id = a.id
                              AND e.source_id IN (SELECT id FROM erase_sources))
                   OR a.owner_user_id = %(u)s)
                  AND NOT EXISTS (SELECT 1 FROM agent_memory_assertion_evidence e
                                   WHERE e.assertion_id = a.id AND e.stance = 'supports'
                                     AND e.source_id NOT IN (SELECT id FROM erase_sources))))
       ON CONFLICT DO NOTHING""",
    # Memories: private, theirs, from a removed source, of a removed assertion or summary,
    # drawn from a removed turn (shared facts and the flush name it: sourceMessageId).
    # A pure projection (no source) of a KEPT assertion stays unless it is private or
    # user-scoped (it only loses their name, below).
    """INSERT INTO erase_memories
       SELECT m.id FROM agent_memories m
        WHERE m.instance_key = %(i)s
          AND ((m.visibility_scope = 'private' AND m.audience_key = %(u)s)
              OR m.source_id IN (SELECT id FROM erase_sources)
              OR m.assertion_id IN (SELECT id FROM erase_assertions)
              OR m.id IN (SELECT s.memory_id FROM agent_context_summaries s
                           WHERE s.id IN (SELECT id FROM erase_summaries)
                             AND s.memory_id IS NOT NULL)
              OR (m.metadata ? 'sourceMessageId'
                  AND m.metadata ->> 'sourceMessageId' IN (SELECT id::text FROM erase_messages))
              OR (m.user_id = %(u)s
                  AND NOT (m.source_id IS NULL AND m.assertion_id IS NOT NULL
                           AND m.memory_scope <> 'user')))
       ON CONFLICT DO NOTHING""",
]

# The ids of every removed ledger, memory and graph row, as text.
_REMOVED_IDS = sql.SQL(
    "(SELECT id::text FROM erase_assertions UNION ALL SELECT id::text FROM erase_memories"
    " UNION ALL SELECT id::text FROM erase_sources UNION ALL SELECT id::text FROM erase_entities"
    " UNION ALL SELECT id::text FROM erase_claims UNION ALL SELECT id::text FROM erase_edges)")

FILL_REFS = sql.SQL(
    "INSERT INTO erase_refs SELECT id FROM {removed} r(id)"
    " UNION SELECT id::text FROM erase_messages UNION SELECT id::text FROM erase_summaries"
    " UNION SELECT id::text FROM erase_dreams ON CONFLICT DO NOTHING").format(
    removed=_REMOVED_IDS)


def _cites(column: str) -> sql.Composable:
    """SQL: the jsonb ``column`` holds, anywhere, a string that is a removed row's id."""
    return sql.SQL("EXISTS (SELECT 1 FROM jsonb_path_query({},"
                   " 'strict $.** ? (@.type() == \"string\")') AS v(s)"
                   " WHERE v.s #>> '{{}}' IN (SELECT id FROM erase_refs))"
                   ).format(sql.Identifier(column))


# (table, DELETE statement), children before parents. Graph evidence returns the items it
# supported (their entities are checked for orphans afterwards).
GRAPH_EVIDENCE = """
    DELETE FROM agent_knowledge_evidence k
     WHERE k.instance_key = %(i)s
       AND (k.entity_id IN (SELECT id FROM erase_entities)
            OR k.claim_id IN (SELECT id FROM erase_claims)
            OR k.edge_id IN (SELECT id FROM erase_edges)
            OR k.dream_id IN (SELECT id FROM erase_dreams)
            OR k.assertion_id IN (SELECT id FROM erase_assertions)
            OR k.source_memory_id IN (SELECT id FROM erase_memories))
    RETURNING k.entity_id, k.claim_id, k.edge_id
"""
DELETES: list[tuple[str, sql.Composable | str]] = [
    ("agent_memory_v2_cleanup_audit",
     sql.SQL("""DELETE FROM agent_memory_v2_cleanup_audit
                WHERE instance_key = %(i)s
                  AND (dream_id IN (SELECT id FROM erase_dreams) OR target_id IN {removed})"""
            ).format(removed=_REMOVED_IDS)),
    # A wiki draft quotes the statements it cites: one citing a removed row goes, whatever
    # its state (a Dream proposes again from what remains).
    ("wiki_change_proposals",
     sql.SQL("""DELETE FROM wiki_change_proposals
                WHERE instance_key = %(i)s
                  AND ((audience_kind = 'private' AND audience_key = %(u)s)
                       OR dream_id IN (SELECT id FROM erase_dreams) OR {} OR {})"""
            ).format(_cites("assertion_refs"), _cites("evidence_refs"))),
    ("agent_knowledge_claim_embeddings",
     """DELETE FROM agent_knowledge_claim_embeddings
        WHERE instance_key = %(i)s AND claim_id IN (SELECT id FROM erase_claims)"""),
    ("agent_knowledge_entity_embeddings",
     """DELETE FROM agent_knowledge_entity_embeddings
        WHERE instance_key = %(i)s AND entity_id IN (SELECT id FROM erase_entities)"""),
    ("agent_knowledge_claims",
     "DELETE FROM agent_knowledge_claims WHERE instance_key = %(i)s"
     " AND id IN (SELECT id FROM erase_claims)"),
    ("agent_knowledge_edges",
     "DELETE FROM agent_knowledge_edges WHERE instance_key = %(i)s"
     " AND id IN (SELECT id FROM erase_edges)"),
    ("agent_knowledge_entities",
     "DELETE FROM agent_knowledge_entities WHERE instance_key = %(i)s"
     " AND id IN (SELECT id FROM erase_entities)"),
    # Events (0025) hold no text, but they name the person (owner, private audience) and
    # the removed rows: they go too (queued webhook deliveries then find no event).
    ("agent_memory_events",
     """DELETE FROM agent_memory_events
        WHERE instance_key = %(i)s
          AND (owner_user_id = %(u)s
               OR (audience_kind = 'private' AND audience_key = %(u)s)
               OR memory_id IN (SELECT id FROM erase_memories)
               OR assertion_id IN (SELECT id FROM erase_assertions)
               OR dream_id IN (SELECT id FROM erase_dreams))"""),
    ("agent_memory_ingestion_outbox",
     sql.SQL("""DELETE FROM agent_memory_ingestion_outbox
                WHERE instance_key = %(i)s AND subject_id::text IN {removed}"""
            ).format(removed=_REMOVED_IDS)),
    ("agent_memory_retrieval_feedback",
     """DELETE FROM agent_memory_retrieval_feedback
        WHERE instance_key = %(i)s
          AND (user_id = %(u)s OR assertion_id IN (SELECT id FROM erase_assertions)
               OR memory_id IN (SELECT id FROM erase_memories)
               OR session_key IN (SELECT session_key FROM erase_sessions))"""),
    ("agent_feedback_runs",
     """DELETE FROM agent_feedback_runs
        WHERE instance_key = %(i)s
          AND (user_id = %(u)s OR session_key IN (SELECT session_key FROM erase_sessions))"""),
    ("agent_memory_chunks",
     "DELETE FROM agent_memory_chunks WHERE instance_key = %(i)s"
     " AND memory_id IN (SELECT id FROM erase_memories)"),
    ("agent_memory_relations",
     """DELETE FROM agent_memory_relations
        WHERE instance_key = %(i)s
          AND (from_memory_id IN (SELECT id FROM erase_memories)
               OR to_memory_id IN (SELECT id FROM erase_memories)
               OR dream_id IN (SELECT id FROM erase_dreams))"""),
    ("agent_memories",
     "DELETE FROM agent_memories WHERE instance_key = %(i)s"
     " AND id IN (SELECT id FROM erase_memories)"),
    ("agent_memory_assertion_evidence",
     """DELETE FROM agent_memory_assertion_evidence
        WHERE instance_key = %(i)s
          AND (assertion_id IN (SELECT id FROM erase_assertions)
               OR source_id IN (SELECT id FROM erase_sources)
               OR dream_id IN (SELECT id FROM erase_dreams))"""),
    ("agent_memory_assertion_conflicts",
     """DELETE FROM agent_memory_assertion_conflicts
        WHERE instance_key = %(i)s
          AND (assertion_id IN (SELECT id FROM erase_assertions)
               OR conflicting_assertion_id IN (SELECT id FROM erase_assertions))"""),
    ("agent_memory_assertion_embeddings",
     "DELETE FROM agent_memory_assertion_embeddings WHERE instance_key = %(i)s"
     " AND assertion_id IN (SELECT id FROM erase_assertions)"),
    ("agent_memory_assertion_reviews",
     """DELETE FROM agent_memory_assertion_reviews
        WHERE instance_key = %(i)s
          AND (assertion_id IN (SELECT id FROM erase_assertions)
               OR dream_id IN (SELECT id FROM erase_dreams))"""),
    ("agent_memory_assertion_history",
     "DELETE FROM agent_memory_assertion_history WHERE instance_key = %(i)s"
     " AND assertion_id IN (SELECT id FROM erase_assertions)"),
    ("agent_memory_assertions",
     "DELETE FROM agent_memory_assertions WHERE instance_key = %(i)s"
     " AND id IN (SELECT id FROM erase_assertions)"),
    ("agent_memory_sources",
     "DELETE FROM agent_memory_sources WHERE instance_key = %(i)s"
     " AND id IN (SELECT id FROM erase_sources)"),
    ("agent_memory_dreams",
     "DELETE FROM agent_memory_dreams WHERE instance_key = %(i)s"
     " AND id IN (SELECT id FROM erase_dreams)"),
    ("agent_context_items",
     """DELETE FROM agent_context_items
        WHERE instance_key = %(i)s
          AND (session_key IN (SELECT session_key FROM erase_sessions)
               OR message_id IN (SELECT id FROM erase_messages)
               OR summary_id IN (SELECT id FROM erase_summaries))"""),
    ("agent_context_summary_messages",
     """DELETE FROM agent_context_summary_messages
        WHERE instance_key = %(i)s
          AND (summary_id IN (SELECT id FROM erase_summaries)
               OR message_id IN (SELECT id FROM erase_messages))"""),
    ("agent_context_summary_parents",
     """DELETE FROM agent_context_summary_parents
        WHERE instance_key = %(i)s
          AND (parent_summary_id IN (SELECT id FROM erase_summaries)
               OR child_summary_id IN (SELECT id FROM erase_summaries))"""),
    ("agent_context_summaries",
     "DELETE FROM agent_context_summaries WHERE instance_key = %(i)s"
     " AND id IN (SELECT id FROM erase_summaries)"),
    ("agent_context_messages",
     "DELETE FROM agent_context_messages WHERE instance_key = %(i)s"
     " AND id IN (SELECT id FROM erase_messages)"),
    ("agent_session_maintenance_events",
     "DELETE FROM agent_session_maintenance_events WHERE instance_key = %(i)s"
     " AND session_key IN (SELECT session_key FROM erase_sessions)"),
    ("agent_session_runs",
     """DELETE FROM agent_session_runs
        WHERE instance_key = %(i)s
          AND (user_id = %(u)s OR session_key IN (SELECT session_key FROM erase_sessions))"""),
    ("agent_session_state",
     "DELETE FROM agent_session_state WHERE instance_key = %(i)s"
     " AND session_key IN (SELECT session_key FROM erase_sessions)"),
    ("agent_session_participants",
     """DELETE FROM agent_session_participants
        WHERE instance_key = %(i)s
          AND (user_id = %(u)s OR session_key IN (SELECT session_key FROM erase_sessions))"""),
    ("agent_channel_members",
     "DELETE FROM agent_channel_members WHERE instance_key = %(i)s AND user_id = %(u)s"),
    ("agent_user_profiles",
     "DELETE FROM agent_user_profiles WHERE instance_key = %(i)s AND user_id = %(u)s"),
    ("agent_user_preferences",
     "DELETE FROM agent_user_preferences WHERE instance_key = %(i)s AND user_id = %(u)s"),
    ("api_keys", "DELETE FROM api_keys WHERE instance_key = %(i)s AND user_id = %(u)s"),
    ("agent_users",
     "DELETE FROM agent_users WHERE instance_key = %(i)s AND user_id = %(u)s"),
]

# Kept rows that named the person or a removed row: the link or the name is cleared.
UPDATES: list[tuple[str, str]] = [
    ("agent_memory_assertions.revision_of",
     """UPDATE agent_memory_assertions SET revision_of = NULL
        WHERE instance_key = %(i)s AND revision_of IN (SELECT id FROM erase_assertions)
          AND id NOT IN (SELECT id FROM erase_assertions)"""),
    ("agent_memory_assertions.superseded_by",
     """UPDATE agent_memory_assertions SET superseded_by = NULL
        WHERE instance_key = %(i)s AND superseded_by IN (SELECT id FROM erase_assertions)
          AND id NOT IN (SELECT id FROM erase_assertions)"""),
    ("agent_memory_assertions.owner_user_id",
     """UPDATE agent_memory_assertions SET owner_user_id = NULL
        WHERE instance_key = %(i)s AND owner_user_id = %(u)s AND audience_kind <> 'private'
          AND id NOT IN (SELECT id FROM erase_assertions)"""),
    ("agent_memories.user_id",
     """UPDATE agent_memories SET user_id = NULL
        WHERE instance_key = %(i)s AND user_id = %(u)s AND memory_scope <> 'user'
          AND visibility_scope <> 'private' AND id NOT IN (SELECT id FROM erase_memories)"""),
]
# After the deletes: kept rows of every table with subject refs lose a ref naming the person.
SCRUB: list[tuple[str, sql.Composable | str]] = [
    (f"{table}.subject_refs",
     sql.SQL("""UPDATE {table} SET subject_refs = subject_refs - 'userId'
                WHERE instance_key = %(i)s AND subject_refs ->> 'userId' = %(u)s"""
            ).format(table=sql.Identifier(table)))
    for table in ("agent_memory_assertions", "agent_memories", "agent_knowledge_entities",
                 "agent_knowledge_claims", "agent_knowledge_edges")]
