"""What an operator needs to judge an instance's memory at a glance (/internal/memory/status).

Besides counts it reports the sessions' maintenance queue and context graph (``sessions``),
the Dreams' model calls, tokens and estimated cost over the last 24 hours and all time
(``modelUsage``, docs/observability.md), and search indexes an interrupted import left broken
(``indexes``):
an empty HNSW placeholder or a dropped GIN index makes search scan instead of using the index
until ``memory-platform db repair-indexes`` (or the next import) rebuilds it. The workspace's
synced prompt files with their content hashes and when they were last synced
(``workspace``), the knowledge graph's share of the re-embedding backlog
(``embeddings.reembedBacklog.graph``) and the most recent Dreams (``recentDreams``) complete
it (issue 32.10).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from memory_platform.features.dreaming.runs import list_dreams
from memory_platform.features.dreaming.summary import dream_row_view
from memory_platform.features.maintenance.legacy import stored_last_import
from memory_platform.features.maintenance.workspace import ORIGIN as WORKSPACE_ORIGIN
from memory_platform.features.maintenance.workspace import SOURCE_TYPE as WORKSPACE_SOURCE_TYPE
from memory_platform.features.maintenance.workspace import stored_last_sync
from memory_platform.features.memories.bulk.indexes import broken_indexes
from memory_platform.features.sessions.metrics import session_status

REPAIR_COMMAND = "memory-platform db repair-indexes"
RECENT_DREAMS = 5           # rows of recentDreams
PROMPT_FILES_SHOWN = 50     # files listed in workspace.files (the count is exact)


def _grouped(conn, query: str | sql.Composable, instance_key: str) -> dict[str, int]:
    return {str(k): int(n) for k, n in conn.execute(query, (instance_key,))}


def memory_status(conn: psycopg.Connection, instance_key: str) -> dict[str, Any]:
    active = conn.execute(
        "SELECT id, generation_key, provider, model, dimensions FROM"
        " agent_memory_embedding_generations WHERE instance_key = %s AND status = 'active'",
        (instance_key,),
    ).fetchone()
    generations = [
        {"id": g, "key": key, "status": status, "chunks": chunks}
        for g, key, status, chunks in conn.execute(
            """
            SELECT g.id, g.generation_key, g.status,
                   (SELECT count(*) FROM agent_memory_chunks c
                     WHERE c.instance_key = g.instance_key AND c.generation_id = g.id)
              FROM agent_memory_embedding_generations g
             WHERE g.instance_key = %s
             ORDER BY g.id
            """,
            (instance_key,),
        )
    ]
    backlog_chunks = conn.execute(
        "SELECT count(*) FROM agent_memory_chunks WHERE instance_key = %s"
        " AND embedding_key IS DISTINCT FROM %s",
        (instance_key, active[1] if active else None),
    ).fetchone()[0]
    backlog_assertions = conn.execute(
        """
        SELECT count(*) FROM agent_memory_assertions a
         WHERE a.instance_key = %s AND a.status = 'active'
           AND NOT EXISTS (SELECT 1 FROM agent_memory_assertion_embeddings e
                            WHERE e.assertion_id = a.id AND e.generation_id = %s)
        """,
        (instance_key, active[0] if active else None),
    ).fetchone()[0]
    pending, failed, oldest = conn.execute(
        """
        SELECT count(*) FILTER (WHERE status = 'pending'),
               count(*) FILTER (WHERE status = 'failed'),
               extract(epoch FROM now() - min(created_at) FILTER (WHERE status IN
                       ('pending', 'failed')))
          FROM agent_memory_ingestion_outbox WHERE instance_key = %s
        """,
        (instance_key,),
    ).fetchone()
    return {
        "instance": instance_key,
        "memories": {
            "byScope": _grouped(conn, "SELECT memory_scope, count(*) FROM agent_memories"
                                " WHERE instance_key = %s GROUP BY 1", instance_key),
            "byVisibility": _grouped(conn, "SELECT visibility_scope, count(*) FROM"
                                     " agent_memories WHERE instance_key = %s GROUP BY 1",
                                     instance_key),
            "bySourceType": _grouped(conn, "SELECT source_type, count(*) FROM agent_memories"
                                     " WHERE instance_key = %s GROUP BY 1", instance_key),
            "byState": _grouped(conn, "SELECT memory_state, count(*) FROM agent_memories"
                                " WHERE instance_key = %s GROUP BY 1", instance_key),
        },
        "assertions": {
            "byStatus": _grouped(conn, "SELECT status, count(*) FROM agent_memory_assertions"
                                 " WHERE instance_key = %s GROUP BY 1", instance_key),
            "byReviewState": _grouped(conn, "SELECT review_state, count(*) FROM"
                                      " agent_memory_assertions WHERE instance_key = %s"
                                      " GROUP BY 1", instance_key),
        },
        "evidence": conn.execute("SELECT count(*) FROM agent_memory_assertion_evidence"
                                 " WHERE instance_key = %s", (instance_key,)).fetchone()[0],
        "conflicts": _grouped(conn, "SELECT status, count(*) FROM"
                              " agent_memory_assertion_conflicts WHERE instance_key = %s"
                              " GROUP BY 1", instance_key),
        "graph": graph_counts(conn, instance_key),
        "embeddings": {
            "active": {"id": active[0], "key": active[1], "provider": active[2],
                       "model": active[3], "dimensions": active[4]} if active else None,
            "generations": generations,
            "reembedBacklog": {"chunks": backlog_chunks, "assertions": backlog_assertions,
                               "graph": graph_backlog(conn, instance_key,
                                                      active[0] if active else None)},
        },
        "outbox": {"pending": pending, "failed": failed,
                   "oldestAgeSeconds": round(float(oldest), 1) if oldest is not None else None},
        "feedback": _grouped(conn, "SELECT event_type, count(*) FROM"
                             " agent_memory_retrieval_feedback WHERE instance_key = %s"
                             " GROUP BY 1", instance_key),
        "indexes": index_report(conn, instance_key),
        "modelUsage": model_usage(conn, instance_key),
        "sessions": session_status(conn, instance_key),
        "legacyImport": stored_last_import(conn, instance_key),
        "workspace": workspace_status(conn, instance_key),
        "recentDreams": recent_dreams(conn, instance_key),
    }


def graph_backlog(conn: psycopg.Connection, instance_key: str,
                  generation_id: int | None) -> dict[str, int]:
    """Active graph entities and claims without a vector of the active generation: the
    knowledge graph's share of the re-embedding backlog."""
    entities, claims = conn.execute(
        """
        SELECT (SELECT count(*) FROM agent_knowledge_entities e
                 WHERE e.instance_key = %(i)s AND e.status = 'active'
                   AND NOT EXISTS (SELECT 1 FROM agent_knowledge_entity_embeddings x
                                    WHERE x.entity_id = e.id AND x.generation_id = %(g)s)),
               (SELECT count(*) FROM agent_knowledge_claims k
                 WHERE k.instance_key = %(i)s AND k.status = 'active'
                   AND NOT EXISTS (SELECT 1 FROM agent_knowledge_claim_embeddings x
                                    WHERE x.claim_id = k.id AND x.generation_id = %(g)s))
        """, {"i": instance_key, "g": generation_id}).fetchone()
    return {"entities": int(entities), "claims": int(claims)}


def graph_counts(conn: psycopg.Connection, instance_key: str) -> dict[str, dict[str, int]]:
    """The knowledge graph's entities, claims and edges by status."""
    return {name: _grouped(conn, sql.SQL("SELECT status, count(*) FROM {} WHERE instance_key"
                                         " = %s GROUP BY 1").format(sql.Identifier(table)),
                           instance_key)
            for name, table in (("entities", "agent_knowledge_entities"),
                                ("claims", "agent_knowledge_claims"),
                                ("edges", "agent_knowledge_edges"))}


def workspace_status(conn: psycopg.Connection, instance_key: str) -> dict[str, Any]:
    """The workspace's synced prompt files (maintenance/workspace.py): how many, when the
    last sync changed one, the path and content hash (sha256) of the first
    ``PROMPT_FILES_SHOWN`` by path, and the last sync's result (``lastSync``: counts, the
    refused files with their reasons, when)."""
    rows = conn.execute(
        "SELECT metadata->>'importSource', metadata->>'fileHash',"
        "       count(*) OVER (), max(updated_at) OVER ()"
        "  FROM agent_memories WHERE instance_key = %s AND source_type = %s"
        "   AND visibility_scope = 'workspace' AND metadata->>'origin' = %s"
        " ORDER BY metadata->>'importSource' LIMIT %s",
        (instance_key, WORKSPACE_SOURCE_TYPE, WORKSPACE_ORIGIN, PROMPT_FILES_SHOWN)).fetchall()
    files, last = (rows[0][2], rows[0][3]) if rows else (0, None)
    return {"files": int(files),
            "lastChangedAt": last.isoformat() if last else None,
            "promptFiles": [{"path": path, "sha256": digest} for path, digest, *_ in rows],
            "lastSync": stored_last_sync(conn, instance_key)}


def recent_dreams(conn: psycopg.Connection, instance_key: str) -> list[dict[str, Any]]:
    """The instance's most recent Dreams as the Dream listings show them
    (``dreaming.summary.dream_row_view``): partition, status, trigger, model, times, error,
    their inputs, outputs and rejections by reason (``stats``) and the rollback state."""
    return [dream_row_view(row)
            for row in list_dreams(conn, instance_key=instance_key, limit=RECENT_DREAMS)]


_USAGE_WINDOWS = ("last24h", "allTime")


def model_usage(conn: psycopg.Connection, instance_key: str) -> dict[str, Any]:
    """The Dreams' own model calls summed from their rows (``stats_json.modelUsage``, written
    by the engine): Dreams with a model call, calls, tokens, estimated cost (priced calls
    only), calls without a price; over the Dreams started in the last 24 hours and all."""
    recent = "(WHERE started_at >= now() - interval '24 hours')"
    sums = ("count(u) {f}, coalesce(sum((u ->> 'calls')::bigint) {f}, 0), "
            "coalesce(sum((u ->> 'promptTokens')::bigint) {f}, 0), "
            "coalesce(sum((u ->> 'completionTokens')::bigint) {f}, 0), "
            "coalesce(sum((u ->> 'totalTokens')::bigint) {f}, 0), "
            "coalesce(sum((u ->> 'estimatedCostUsd')::numeric) {f}, 0), "
            "coalesce(sum((u ->> 'unpricedCalls')::bigint) {f}, 0)")
    row = conn.execute(
        _USAGE_QUERY.format(columns=sums.format(f="FILTER " + recent) + ", "
                            + sums.format(f="")),
        (instance_key,),
    ).fetchone()
    out: dict[str, Any] = {}
    for index, name in enumerate(_USAGE_WINDOWS):
        dreams, calls, prompt, completion, total, cost, unpriced = row[index * 7:index * 7 + 7]
        out[name] = {"dreams": int(dreams), "calls": int(calls), "promptTokens": int(prompt),
                     "completionTokens": int(completion), "totalTokens": int(total),
                     "estimatedCostUsd": round(float(cost), 6),
                     "unpricedCalls": int(unpriced)}
    return out


# Only constant text goes into {columns}; the instance is a parameter.
_USAGE_QUERY = """
    SELECT {columns}
      FROM (SELECT stats_json -> 'modelUsage' AS u, started_at
              FROM agent_memory_dreams
             WHERE instance_key = %s
               AND jsonb_typeof(stats_json -> 'modelUsage') = 'object') d
"""


def index_report(conn: psycopg.Connection, instance_key: str) -> dict[str, Any]:
    """Whether the search indexes the instance uses are sound; if not, which are broken and
    how to repair them."""
    broken = broken_indexes(conn, instance_key)
    return {"healthy": not broken, "broken": broken,
            "repair": None if not broken else
            f"run `{REPAIR_COMMAND}` (or the next import rebuilds them); an import running "
            "right now rebuilds its own when it finishes"}
