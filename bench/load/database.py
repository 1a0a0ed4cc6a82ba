"""The PostgreSQL server and database a load run measures: given or embedded, fresh (corpus
imported) or reused, then warmed and given API keys."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg

from bench.common import fresh_database, machine_info
from bench.load import INSTANCE
from bench.load.corpus import build_corpus, corpus_facts
from bench.load.workload import channel_threads
from memory_platform.features import apikeys
from memory_platform.foundation.db import embedded
from memory_platform.foundation.db.connection import start_embedded, with_database
from memory_platform.foundation.settings import Settings
from memory_platform.shared.membership import add_channel_member


@dataclass(frozen=True)
class Postgres:
    """A running server: its admin URL, and its pid and data directory when embedded."""

    url: str
    pid: int | None
    pgdata: Path | None


@dataclass(frozen=True)
class BenchDatabase:
    """The database of a run, ready for load: what it holds and how the server is set."""

    url: str
    name: str
    corpus: dict
    prewarmed: list[str]
    tokens: list[str]
    machine: dict
    postgres_settings: dict


def start_postgres(stack: contextlib.ExitStack, database_url: str | None,
                   pgdata: Path | None, *, keep: bool) -> Postgres:
    """The server at ``database_url``, or an embedded one in ``pgdata`` (default: a
    temporary directory, removed when ``stack`` closes unless ``keep``)."""
    if database_url:
        return Postgres(database_url, None, None)
    if pgdata is not None:
        pgdata = pgdata.resolve()
    else:
        parent = Path(tempfile.mkdtemp(prefix="memory-api-load-"))
        pgdata = parent / "pgdata"
        if not keep:
            stack.callback(shutil.rmtree, parent, ignore_errors=True)
            stack.callback(embedded.destroy, pgdata)
    info = start_embedded(Settings(_env_file=None,  # type: ignore[call-arg]
                                   embedded_pgdata=pgdata))
    stack.callback(embedded.release_server, pgdata)
    return Postgres(info.uri("postgres"), info.pid, pgdata)


def open_database(stack: contextlib.ExitStack, server_url: str, reuse: str | None, *,
                  keep: bool, n: int, dims: int) -> tuple[str, dict]:
    """The URL of database ``reuse`` on the server (nothing imported), or of a fresh one
    (dropped when ``stack`` closes unless ``keep``) with ``n`` memories imported; and the
    import's numbers (empty when reused)."""
    if reuse:
        return with_database(server_url, reuse), {}
    url = stack.enter_context(fresh_database(server_url, keep=keep))
    return url, build_corpus(url, n, dims)


def prepare_database(url: str, corpus: dict, *, users: int, warm: bool) -> BenchDatabase:
    """Count the corpus (SystemExit when the instance holds no memories), prewarm when
    ``warm``, and create one API key for each of ``users`` users."""
    name = url.split("?", 1)[0].rsplit("/", 1)[-1]
    with psycopg.connect(url, autocommit=True) as conn:
        corpus = {**corpus, **corpus_facts(conn)}
        if not corpus["memories"]:
            raise SystemExit(f"database {name} holds no {INSTANCE} memories")
        warmed = prewarm(conn) if warm else []
        tokens = create_keys(conn, users)
        machine = machine_info(conn)
        pg_settings = {setting: conn.execute("SELECT current_setting(%s)", (setting,)
                                             ).fetchone()[0]
                       for setting in ("shared_buffers", "max_connections", "work_mem")}
    return BenchDatabase(url, name, corpus, warmed, tokens, machine, pg_settings)


def prewarm(conn: psycopg.Connection) -> list[str]:
    """Load the tables and indexes search reads into shared buffers (a server in service is
    warm; a freshly started one is not). Best effort: needs the pg_prewarm extension."""
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    except psycopg.Error:
        return []
    names = conn.execute(
        """
        SELECT c.oid::regclass::text
          FROM pg_class c
          LEFT JOIN pg_index i ON i.indexrelid = c.oid
          LEFT JOIN pg_class t ON t.oid = i.indrelid
         WHERE coalesce(t.relname, c.relname) IN
               ('agent_memory_chunks', 'agent_memories', 'agent_memory_assertions', 'api_keys')
           AND c.relkind IN ('r', 'i')
         ORDER BY c.relkind DESC, pg_relation_size(c.oid) DESC
        """).fetchall()
    done = []
    for (name,) in names:  # tables first, indexes last (they matter most), biggest first
        with contextlib.suppress(psycopg.Error):
            conn.execute("SELECT pg_prewarm(%s::regclass)", (name,))
            done.append(name)
    return done


def create_keys(conn: psycopg.Connection, users: int) -> list[str]:
    """Tokens of new keys (memory:read + memory:write) for users ``user-000`` onwards, each a
    member of the corpus's channel threads (the workload names them)."""
    tokens = []
    for i in range(users):
        user = f"user-{i:03d}"
        _, token = apikeys.create_key(conn, instance_key=INSTANCE, user_id=user,
                                      scopes=("memory:read", "memory:write"),
                                      name="bench/api_load")
        for thread in channel_threads():
            add_channel_member(conn, INSTANCE, thread, user, added_by="bench")
        tokens.append(token)
    return tokens
