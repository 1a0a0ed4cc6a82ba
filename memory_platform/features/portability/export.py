"""``export_instance``: one instance, or one audience of it, as JSON Lines (format.py).

Read in one REPEATABLE READ, READ ONLY transaction (one consistent snapshot), each kind
through a server-side cursor, so the memory used does not grow with the instance. The footer
carries the SHA-256 of every line before it, which the import verifies before it writes.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

import psycopg
from psycopg import sql

from memory_platform.features.portability.format import KINDS, LINK, Kind, footer, header
from memory_platform.foundation.db.units import require_idle
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import AUDIENCE_KINDS
from memory_platform.shared.embeddings.generations import active_generation

FETCH = 2000


@dataclass
class ExportStats:
    instance_key: str
    counts: dict[str, int] = field(default_factory=dict)
    links: int = 0
    lines: int = 0
    seconds: float = 0.0


def parse_audience(text: str) -> tuple[str, str]:
    """``KIND:KEY`` (``team`` and ``workspace`` may omit the key: it is the instance)."""
    kind, _, key = text.partition(":")
    if kind not in AUDIENCE_KINDS:
        raise InvalidInput(f"unknown audience kind {kind!r}; use one of "
                           f"{', '.join(AUDIENCE_KINDS)} (KIND:KEY)")
    if not key and kind in ("private", "channel"):
        raise InvalidInput(f"a {kind} audience needs its key ({kind}:KEY)")
    return kind, key


# The sessions of an audience: a private audience's are its user's, a channel's those held
# in that thread or room; team and workspace audiences carry no sessions.
_SESSIONS = {
    "private": """
        SELECT session_key FROM agent_session_state
         WHERE instance_key = %(instance)s AND user_id = %(key)s
        UNION SELECT session_key FROM agent_session_runs
         WHERE instance_key = %(instance)s AND user_id = %(key)s
        UNION SELECT session_key FROM agent_context_messages
         WHERE instance_key = %(instance)s AND user_id = %(key)s""",
    "channel": """
        SELECT session_key FROM agent_session_runs
         WHERE instance_key = %(instance)s
           AND (channel_thread_key = %(key)s OR group_room_id = %(key)s)
        UNION SELECT session_key FROM agent_context_messages
         WHERE instance_key = %(instance)s AND channel_thread_key = %(key)s""",
}

_PARENT_TABLE = {"memory": ("agent_memories", "visibility_scope"),
                 "assertion": ("agent_memory_assertions", "audience_kind"),
                 "entity": ("agent_knowledge_entities", "visibility_scope"),
                 "claim": ("agent_knowledge_claims", "visibility_scope")}
_IN_AUDIENCE = "{table} p WHERE p.instance_key = %(instance)s AND p.{col} = %(kind)s " \
               "AND p.audience_key = %(key)s"


def _audience_filter(kind: Kind, audience: tuple[str, str] | None) -> sql.Composable:
    """The WHERE clause beyond the instance: the rows of ``audience`` (None: all)."""
    if audience is None:
        return sql.SQL("")
    if kind.audience == "own":
        return sql.SQL(" AND t.{} = %(kind)s AND t.audience_key = %(key)s").format(
            sql.Identifier(kind.kind_column))
    if kind.audience == "parent":
        if kind.parent_kind == "graph":
            parts = [sql.SQL("EXISTS (SELECT 1 FROM {} p WHERE p.instance_key = %(instance)s"
                             " AND p.id = t.{} AND p.visibility_scope = %(kind)s"
                             " AND p.audience_key = %(key)s)").format(
                sql.Identifier(table), sql.Identifier(col))
                for table, col in (("agent_knowledge_entities", "entity_id"),
                                   ("agent_knowledge_claims", "claim_id"),
                                   ("agent_knowledge_edges", "edge_id"))]
            return sql.SQL(" AND (") + sql.SQL(" OR ").join(parts) + sql.SQL(")")
        table, col = _PARENT_TABLE[kind.parent_kind]
        return sql.SQL(" AND EXISTS (SELECT 1 FROM {} p WHERE p.instance_key = %(instance)s"
                       " AND p.id = t.{} AND p.{} = %(kind)s AND p.audience_key = %(key)s)"
                       ).format(sql.Identifier(table), sql.Identifier(kind.parent),
                                sql.Identifier(col))
    if kind.audience == "session":
        sessions = _SESSIONS.get(audience[0])
        if sessions is None:
            return sql.SQL(" AND false")
        return sql.SQL(" AND t.session_key IN (") + sql.SQL(sessions) + sql.SQL(")")
    # users: a private audience carries its user; team and workspace every user; a channel
    # its members
    if audience[0] == "private":
        return sql.SQL(" AND t.user_id = %(key)s")
    if audience[0] == "channel":
        return sql.SQL(" AND t.channel_key = %(key)s" if kind.name == "channel_member"
                       else " AND false")
    return sql.SQL("")


def _skipped(kind: Kind, with_embeddings: bool) -> list[str]:
    skip = list(kind.skip) + list(kind.links)
    if kind.vector and not with_embeddings:
        skip += ["embedding", "embedding_key"]
    return skip


def _generated(conn: psycopg.Connection, table: str) -> list[str]:
    rows = conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = "
        "current_schema() AND table_name = %s AND is_generated = 'ALWAYS'", (table,)).fetchall()
    return [r[0] for r in rows]


def _schema_version(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def export_instance(conn: psycopg.Connection, out: IO[str], instance_key: str, *,
                    audience: tuple[str, str] | None = None, with_embeddings: bool = False,
                    progress: Callable[[ExportStats], None] | None = None) -> ExportStats:
    """Write the instance (or ``audience`` of it) to ``out``; ``conn`` must be idle. Vectors
    only ``with_embeddings`` (the header names their generation)."""
    require_idle(conn, "export_instance")
    started = time.perf_counter()
    if audience and audience[0] in ("team", "workspace") and not audience[1]:
        audience = (audience[0], instance_key)
    stats = ExportStats(instance_key)
    params: dict[str, Any] = {"instance": instance_key,
                              "kind": audience[0] if audience else None,
                              "key": audience[1] if audience else None}

    digest = hashlib.sha256()

    def write(record: dict) -> None:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        out.write(line)
        digest.update(line.encode("utf-8"))
        stats.lines += 1

    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        generation = active_generation(conn, instance_key)
        embedding = None
        if with_embeddings and generation is not None:
            embedding = {"generation_key": generation.generation_key,
                         "provider": generation.provider, "model": generation.model,
                         "dimensions": generation.dimensions,
                         "preprocessing": generation.preprocessing}
        write(header(instance_key, audience, schema_version=_schema_version(conn),
                     exported_at=datetime.now(UTC).isoformat(), embedding=embedding))
        for kind in KINDS:
            if kind.vector and kind.name != "chunk" and not with_embeddings:
                continue
            drop = _skipped(kind, with_embeddings) + _generated(conn, kind.table)
            statement = sql.SQL(
                "SELECT to_jsonb(t) - %(drop)s::text[] FROM {} t "
                "WHERE t.instance_key = %(instance)s{} ORDER BY {}").format(
                sql.Identifier(kind.table), _audience_filter(kind, audience),
                sql.SQL(kind.order_by))
            count = 0
            with conn.cursor(name=f"export_{kind.name}") as cur:
                cur.itersize = FETCH
                cur.execute(statement, {**params, "drop": drop})
                for (row,) in cur:
                    write({"kind": kind.name, "row": row})
                    count += 1
                    if progress and count % FETCH == 0:
                        stats.counts[kind.name] = count
                        progress(stats)
            stats.counts[kind.name] = count
            if progress:
                progress(stats)
        for kind in KINDS:
            if not kind.links:
                continue
            for column in kind.links:
                statement = sql.SQL(
                    "SELECT t.id::text, t.{col}::text FROM {table} t "
                    "WHERE t.instance_key = %(instance)s AND t.{col} IS NOT NULL{filter} "
                    "ORDER BY t.id").format(col=sql.Identifier(column),
                                            table=sql.Identifier(kind.table),
                                            filter=_audience_filter(kind, audience))
                with conn.cursor(name=f"export_link_{kind.name}_{column}") as cur:
                    cur.itersize = FETCH
                    cur.execute(statement, params)
                    for row_id, value in cur:
                        write({"kind": LINK, "of": kind.name, "id": row_id,
                               "column": column, "value": value})
                        stats.links += 1
    stats.seconds = time.perf_counter() - started
    write(footer(stats.counts, stats.links, stats.lines + 1, digest.hexdigest()))
    return stats
