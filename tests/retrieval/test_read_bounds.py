"""Bounded read work: every lexical arm reads a bounded number of full-text matches whoever
asks (F9), the question is embedded once and before any statement (F15), and the search
statement's placeholders are numbered outside its literals (F27)."""

from __future__ import annotations

import re
import uuid
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.pq import TransactionStatus

from memory_platform.features import context
from memory_platform.features.context import context_get, context_search
from memory_platform.features.graph.search import knowledge_search
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval import search
from memory_platform.features.retrieval.assertions import (
    _lexical,
    search_assertions,
    visible_assertion_ids,
)
from memory_platform.features.retrieval.feedback.events import (
    record_response,
    record_visible_injection,
)
from memory_platform.features.retrieval.memories import get_memory
from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.retrieval.statements import numbered
from memory_platform.foundation.errors import NotFound
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.factory import get_provider
from tests.memories.support import OutageEmbedder
from tests.support.settings import hash_embedding_settings

SCAN_CAP = 10
ROWS = 40  # matching rows of another instance, four times the cap
WORDS = ("invoice ledger audit payroll budget vendor contract deadline filing mandate "
         "receipt tariff pension customs warehouse shipment forecast quota refund ticket "
         "license permit escrow dividend").split()
TEXT = " ".join(WORDS)


@pytest.fixture(scope="module")
def bounded(module_database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return hash_embedding_settings(module_database_url,
                                   data_dir=tmp_path_factory.mktemp("state"),
                                   retrieval_lexical_scan_cap=SCAN_CAP)


@pytest.fixture(scope="module")
def crowded(db, bounded: Settings) -> str:
    """An instance with ``ROWS`` chunks, assertions, messages, summaries and graph claims,
    each holding all 24 words."""
    instance = f"crowded-{uuid.uuid4().hex[:8]}"
    writer = AccessContext(instance, user_id="olga")
    for i in range(ROWS):
        store_memory(db, bounded, writer,
                     MemoryWrite(f"Note {i}: {TEXT}", source_type="manual", visibility="team"))
        db.execute("INSERT INTO agent_memory_assertions (instance_key, audience_kind,"
                   " audience_key, identity_hash, assertion_type, assertion_text, status,"
                   " review_state, origin) VALUES (%s, 'workspace', %s, %s, 'fact', %s,"
                   " 'active', 'policy_approved', 'explicit')",
                   (instance, instance, uuid.uuid4().hex, f"Fact {i}: {TEXT}"))
        db.execute("INSERT INTO agent_context_messages (instance_key, session_key, user_id,"
                   " seq, role, content) VALUES (%s, 'web:olga', 'olga', %s, 'user', %s)",
                   (instance, i, f"Message {i}: {TEXT}"))
        db.execute("INSERT INTO agent_context_summaries (instance_key, session_key, user_id,"
                   " kind, content) VALUES (%s, 'web:olga', 'olga', 'leaf', %s)",
                   (instance, f"Summary {i}: {TEXT}"))
        entity = db.execute(
            "INSERT INTO agent_knowledge_entities (instance_key, entity_type, label,"
            " normalized_label, visibility_scope, audience_key)"
            " VALUES (%s, 'concept', %s, %s, 'workspace', %s) RETURNING id",
            (instance, f"topic {i}", f"topic {i}", instance)).fetchone()[0]
        db.execute("INSERT INTO agent_knowledge_claims (instance_key, subject_entity_id,"
                   " predicate, object_value, assertion_text, visibility_scope, audience_key)"
                   " VALUES (%s, %s, 'covers', 'all', %s, 'workspace', %s)",
                   (instance, entity, f"Claim {i}: {TEXT}", instance))
    return instance


@pytest.fixture
def stranger(db, bounded) -> AccessContext:
    """A caller of a small instance (one unrelated memory, so a search plan has something to
    join): it sees none of the crowded instance's rows."""
    ctx = AccessContext(f"small-{uuid.uuid4().hex[:8]}", user_id="eve")
    store_memory(db, bounded, ctx, MemoryWrite("Lunch is served at noon on Fridays.",
                                               source_type="manual", visibility="workspace"))
    return ctx


class Explaining:
    """A connection stand-in that runs EXPLAIN ANALYZE (JSON) of every statement first."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn, self.plans = conn, []

    def execute(self, query: Any, params: Any = None) -> Any:
        explain = sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) {}").format(
            query if isinstance(query, sql.Composable) else sql.SQL(query))
        self.plans.append(self.conn.execute(explain, params).fetchone()[0][0]["Plan"])
        return self.conn.execute(query, params)


def _rows_read(plan: dict[str, Any], table: str) -> list[int]:
    """Rows each scan of ``table`` in ``plan`` produced."""
    found = [plan["Actual Rows"]] if plan.get("Relation Name") == table else []
    for child in plan.get("Plans", []):
        found.extend(_rows_read(child, table))
    return found


# --- F9: bounded lexical arms ------------------------------------------------------------


def test_f9_keyword_only_search_of_24_frequent_words_reads_at_most_the_scan_cap(
        db, bounded, crowded, stranger):
    """Review A15: a key of an empty instance, 24 words every chunk of another instance
    holds, no query vector (keyword-only mode): the chunk scan stops at the cap."""
    plan: list[str] = []
    hits = search_memories(db, bounded, stranger, TEXT, embedder=OutageEmbedder(),
                           stamp=False, explain=plan)
    assert hits == []
    keyword_scans = [int(re.search(r"actual [^)]*rows=(\d+)", line).group(1))
                     for line, following in zip(plan, plan[1:], strict=False)
                     if re.search(r"Scan on agent_memory_chunks .*actual", line)
                     and "content_tsv @@" in following]
    assert keyword_scans and max(keyword_scans) <= SCAN_CAP, "\n".join(plan)


def test_f9_the_crowded_instance_still_finds_its_own_rows(db, bounded, crowded):
    hits = search_memories(db, bounded, AccessContext(crowded, user_id="olga"), "ledger audit",
                           embedder=OutageEmbedder(), stamp=False)
    assert hits


def test_f9_assertion_lexical_arm_reads_at_most_the_scan_cap(db, bounded, crowded, stranger):
    explaining = Explaining(db)
    explaining.execute(_lexical(stranger, WORDS, WORDS, 24, SCAN_CAP))
    [plan] = explaining.plans
    assert 0 < max(_rows_read(plan, "agent_memory_assertions")) <= SCAN_CAP


def test_f9_history_and_graph_arms_read_at_most_the_scan_cap(db, bounded, crowded, stranger):
    explaining = Explaining(db)
    terms = context._lexical_terms(db, bounded, stranger, TEXT)
    assert context._search_history(explaining, stranger, terms, 40) == []
    [history] = explaining.plans
    for table in ("agent_context_messages", "agent_context_summaries"):
        assert 0 < max(_rows_read(history, table)) <= SCAN_CAP, table
    plan: list[str] = []
    result = knowledge_search(db, bounded, stranger, TEXT, embedder=OutageEmbedder(),
                              explain=plan)
    assert result.claims == [] and result.entities == []
    claim_scans = [int(re.search(r"actual [^)]*rows=(\d+)", line).group(1)) for line in plan
                   if re.search(r"Scan on agent_knowledge_claims x(_\d+)? .*actual", line)]
    assert claim_scans and 0 < max(claim_scans) <= SCAN_CAP, "\n".join(plan)


def test_f9_the_owner_still_finds_its_history_and_claims(db, bounded, crowded):
    items = context_search(db, bounded, AccessContext(crowded, user_id="olga"),
                           "payroll pension", embedder=OutageEmbedder())
    kinds = {item.kind for item in items}
    assert "claim" in kinds and kinds & {"message", "summary"}


# --- F15: the question is embedded once, outside any transaction --------------------------


class CountingProvider:
    """The configured provider, counting its query embeddings and noting whether a
    transaction was open on ``conn`` at each call."""

    def __init__(self, provider: Any, conn: psycopg.Connection) -> None:
        self._provider, self._conn = provider, conn
        self.calls: list[TransactionStatus] = []
        for name in ("provider", "model", "dimensions", "preprocessing", "strategy",
                     "similarity_floor"):
            setattr(self, name, getattr(provider, name))

    def embed_documents(self, texts):
        return self._provider.embed_documents(texts)

    def embed_query(self, text: str):
        self.calls.append(self._conn.info.transaction_status)
        return self._provider.embed_query(text)


@pytest.fixture
def pool_like_connection(module_database_url: str):
    """A connection as the API's pool hands it out: not autocommit, idle."""
    with psycopg.connect(module_database_url) as connection:
        register_vector(connection)
        yield connection


def test_f15_context_search_embeds_the_question_once_before_any_statement(
        bounded, crowded, pool_like_connection):
    counting = CountingProvider(get_provider(bounded), pool_like_connection)
    context_search(pool_like_connection, bounded, AccessContext(crowded, user_id="olga"),
                   "payroll pension", embedder=counting)
    assert counting.calls == [TransactionStatus.IDLE]


def test_f15_memory_search_embeds_before_any_statement(bounded, crowded,
                                                       pool_like_connection):
    counting = CountingProvider(get_provider(bounded), pool_like_connection)
    search_memories(pool_like_connection, bounded, AccessContext(crowded, user_id="olga"),
                    "payroll pension", embedder=counting, stamp=False)
    assert counting.calls == [TransactionStatus.IDLE]


# --- F27: placeholders are numbered outside literals --------------------------------------


def test_f27_numbering_never_rewrites_a_literal():
    statement = sql.SQL("SELECT {}, {}, {}, 100 %% 7, {}").format(
        sql.Literal("50%(user)s off %% now"), sql.Placeholder("user"),
        sql.Identifier("odd%(instance)s"), sql.Placeholder("instance"))
    rendered = numbered(statement)
    assert rendered.text == (b"SELECT '50%(user)s off %% now', $1, \"odd%(instance)s\","
                             b" 100 % 7, $2")
    assert rendered.roles == ("user", "instance")


def test_f27_the_search_statement_numbers_every_role(db, bounded, crowded):
    ctx = AccessContext(crowded, user_id="olga", channel_thread_key="slack:C1:1")
    search_memories(db, bounded, ctx, "ledger", stamp=False)
    for statement in search._STATEMENTS.values():
        assert b"%(" not in statement.text
        assert len(set(re.findall(rb"\$(\d+)", statement.text))) == len(statement.roles)


PERCENT_CONTEXT = {"user_id": "u%s", "channel_thread_key": "room:50%(qv)s %s"}


def test_f27_a_percent_in_a_callers_values_never_confuses_parameters(db, bounded, crowded):
    """A runtime key may name any user and channel: '%s' or '%(qv)s' in them is text, not a
    placeholder, in every statement that embeds them as literals and takes parameters."""
    ctx = AccessContext(crowded, **PERCENT_CONTEXT)
    assertion = db.execute("SELECT id FROM agent_memory_assertions WHERE instance_key = %s"
                           " LIMIT 1", (crowded,)).fetchone()[0]
    assert visible_assertion_ids(db, ctx, [assertion]) == [assertion]
    assert search_assertions(db, bounded, ctx, "ledger audit")
    record_visible_injection(db, ctx, [assertion], run_id="percent-run")
    assert record_response(db, ctx, run_id="percent-run", response_text=f"Fact: {TEXT}",
                           settings=bounded) == [assertion]
    with pytest.raises(NotFound):
        get_memory(db, ctx, uuid.uuid4())
    assert search_memories(db, bounded, ctx, "ledger audit", stamp=False)
    assert context_get(db, ctx, f"assertion:{assertion}").details["evidence"] is not None
    for kind in ("message", "summary", "claim", "entity"):
        with pytest.raises(NotFound):
            context_get(db, ctx, f"{kind}:{uuid.uuid4()}")
