"""Tests that pin a plan shape: which of the exact and the HNSW sub-plan a vector arm runs,
what each returns, and how the chunk search statement is cached and written. They reach into
private names on purpose (the assertion vector arm ``_semantic_ids``, the statement cache
``search._STATEMENTS``): a refactor that changes a plan breaks them knowingly.

One corpus serves the module: a few hundred facts written through ``store_memory`` into every
audience, of which some are made unrecallable afterwards (superseded, rejected, back to
review, expired) while their vectors stay, and facts of another instance: the nearest
neighbours of many queries are rows the reader must never get back. The recall rule and the
caller's transaction settings are checked on both plans over it.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import pytest

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval import search
from memory_platform.features.retrieval.assertions import _semantic_ids, search_assertions
from memory_platform.features.retrieval.question import embed_question
from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.retrieval.statements import ShapeCache
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.factory import get_provider
from memory_platform.shared.embeddings.generations import index_name
from tests.support.settings import hash_embedding_settings

HASH_KEY = "hash:feature-hash-v1:1536:v1"
CAP = 24  # the vector arm's cap at the default topK (6)

_WORDS = [
    "invoice", "payroll", "falcon", "budget", "audit", "server", "deploy", "client", "tax",
    "contract", "meeting", "report", "backup", "license", "travel", "hiring", "vendor",
    "refund", "pricing", "roadmap", "Rechnung", "Steuer", "Kunde", "Vertrag", "Urlaub",
    "Lieferant", "Angebot", "Mahnung", "Quartal", "Bilanz",
]


@pytest.fixture(scope="module")
def make_settings(module_database_url: str,
                  tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Settings]:
    state: Path = tmp_path_factory.mktemp("state")

    def make(**overrides) -> Settings:
        return hash_embedding_settings(module_database_url, data_dir=state, **overrides)
    return make


@pytest.fixture(scope="module")
def settings(make_settings) -> Settings:
    return make_settings()


@pytest.fixture(scope="module")
def hnsw(make_settings) -> Settings:
    """Every visible set counts as large: the HNSW path."""
    return make_settings(retrieval_exact_scan_max=0)


@dataclass(frozen=True)
class Corpus:
    ada: AccessContext  # a user in a direct session
    thread: AccessContext  # an unlinked reader in channel thread slack:T1
    recallable: dict[UUID, set[str]]  # assertion -> the readers ("ada", "thread") it is for
    texts: dict[UUID, str]

    def allowed(self, reader: str) -> set[UUID]:
        return {i for i, readers in self.recallable.items() if reader in readers}


def _fact(rng: random.Random, i: int) -> str:
    return f"Fact {i}: {' '.join(rng.sample(_WORDS, 4))} follow-up for team {i % 7}."


@pytest.fixture(scope="module")
def corpus(db, settings) -> Corpus:
    rng = random.Random(20240611)
    instance = f"asearch-{uuid.uuid4().hex[:10]}"
    ada = AccessContext(instance, user_id="ada", session_key="web:ada")
    bob = AccessContext(instance, user_id="bob", session_key="web:bob")
    thread = AccessContext(instance, channel_thread_key="slack:T1", channel_type="slack")
    other_thread = AccessContext(instance, channel_thread_key="slack:T2", channel_type="slack")
    elsewhere = AccessContext(f"elsewhere-{uuid.uuid4().hex[:10]}", user_id="ada")
    writes = ([(ada, "private", {"ada"})] * 200 + [(ada, "team", {"ada", "thread"})] * 60
              + [(bob, "private", set())] * 60 + [(thread, "channel", {"thread"})] * 40
              + [(other_thread, "channel", set())] * 40 + [(elsewhere, "private", set())] * 40)
    recallable, texts = {}, {}
    for i, (ctx, visibility, readers) in enumerate(writes):
        text = _fact(rng, i)
        stored = store_memory(db, settings, ctx, MemoryWrite(text, visibility=visibility))
        assert stored.assertion_status == "active"
        recallable[stored.assertion_id], texts[stored.assertion_id] = readers, text
    demoted = [i for i, readers in recallable.items() if readers == {"ada"}][:20]
    _make_unrecallable(db, demoted)
    recallable.update({i: set() for i in demoted})
    db.execute("ANALYZE agent_memory_assertions, agent_memory_assertion_embeddings")
    return Corpus(ada, thread, recallable, texts)


def _make_unrecallable(db, ids: list[UUID]) -> None:
    """Take assertions out of recall the ways the ledger does, keeping their vectors."""
    superseded, rejected, pending, expired = (ids[k::4] for k in range(4))
    db.execute("UPDATE agent_memory_assertions SET status = 'superseded' WHERE id = ANY(%s)",
               (superseded,))
    db.execute("UPDATE agent_memory_assertions SET status = 'rejected',"
               " review_state = 'human_rejected' WHERE id = ANY(%s)", (rejected,))
    db.execute("UPDATE agent_memory_assertions SET status = 'candidate',"
               " review_state = 'pending' WHERE id = ANY(%s)", (pending,))
    db.execute("UPDATE agent_memory_assertions SET valid_to = now() - interval '1 day'"
               " WHERE id = ANY(%s)", (expired,))


def _hnsw_scans(db) -> int:
    db.execute("SELECT pg_stat_force_next_flush()")
    return db.execute("SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes"
                      " WHERE indexrelname = %s",
                      (index_name("agent_memory_assertion_embeddings", HASH_KEY),)).fetchone()[0]


@pytest.fixture
def index_walks(db):
    # At a few hundred rows the planner rightly prefers sorting an index range over the HNSW
    # index; taking the sort away makes it walk the index, which is what these tests are about.
    db.execute("SET enable_sort = off")
    yield
    db.execute("RESET enable_sort")


def _nearest(db, settings: Settings, ctx: AccessContext, query: str) -> list[UUID]:
    return _semantic_ids(db, settings, ctx, embed_question(get_provider(settings), query), CAP)


def _queries(count: int) -> list[str]:
    rng = random.Random(7)
    return [" ".join(rng.sample(_WORDS, 2)) for _ in range(count)]


# --- exact scan vs HNSW ------------------------------------------------------------------


def test_hnsw_path_finds_what_the_exact_scan_finds(db, settings, hnsw, corpus, index_walks):
    arm_recalls, hit_recalls = [], []
    for query in _queries(12):
        before = _hnsw_scans(db)
        exact = _nearest(db, settings, corpus.ada, query)
        exact_hits = {h.id for h in search_assertions(db, settings, corpus.ada, query)}
        assert _hnsw_scans(db) == before
        approximate = _nearest(db, hnsw, corpus.ada, query)
        approximate_hits = {h.id for h in search_assertions(db, hnsw, corpus.ada, query)}
        assert _hnsw_scans(db) > before
        # The iterative scan fills the cap past the neighbours the reader may not recall.
        assert len(exact) == len(approximate) == CAP
        arm_recalls.append(len(set(exact) & set(approximate)) / len(exact))
        assert len(exact_hits) == 6
        hit_recalls.append(len(exact_hits & approximate_hits) / len(exact_hits))
    assert sum(arm_recalls) / len(arm_recalls) >= 0.9
    assert sum(hit_recalls) / len(hit_recalls) >= 0.9


def test_both_paths_rank_by_the_full_precision_distance(db, settings, hnsw, corpus,
                                                       index_walks):
    query = _queries(1)[0]
    vector = get_provider(settings).embed_query(query)
    for config in (settings, hnsw):
        ids = _nearest(db, config, corpus.ada, query)
        distances = db.execute(
            "SELECT e.embedding::vector(1536) <=> %s::vector(1536)"
            "  FROM unnest(%s::uuid[]) WITH ORDINALITY AS r(id, n)"
            "  JOIN agent_memory_assertion_embeddings e ON e.assertion_id = r.id"
            " ORDER BY r.n", (vector, ids)).fetchall()
        assert [d for (d,) in distances] == sorted(d for (d,) in distances)
        assert all(1 - d >= settings.retrieval_min_score for (d,) in distances)


def test_the_gate_scans_up_to_exact_max_visible_assertions_exactly(db, make_settings, corpus,
                                                                   index_walks):
    visible = len(corpus.allowed("ada"))
    for exact_max, walks_the_index in ((visible, False), (visible - 1, True)):
        before = _hnsw_scans(db)
        ids = _nearest(db, make_settings(retrieval_exact_scan_max=exact_max), corpus.ada,
                       "payroll audit")
        assert ids
        assert (_hnsw_scans(db) > before) is walks_the_index


def test_the_default_gate_scans_a_small_audience_exactly(db, settings, corpus, index_walks):
    before = _hnsw_scans(db)
    assert search_assertions(db, settings, corpus.thread, "payroll audit")
    assert _hnsw_scans(db) == before


# --- the recall rule on both paths -------------------------------------------------------


@pytest.mark.parametrize("reader", ["ada", "thread"])
def test_no_path_returns_an_assertion_the_reader_may_not_recall(db, settings, hnsw, corpus,
                                                                index_walks, reader):
    ctx = getattr(corpus, reader)
    allowed = corpus.allowed(reader)
    forbidden = [i for i in corpus.texts if i not in allowed]
    # Their own texts: the forbidden assertions are the nearest neighbours of these queries.
    queries = [corpus.texts[i] for i in forbidden[::15]] + _queries(4)
    for config in (settings, hnsw):
        for query in queries:
            nearest = _nearest(db, config, ctx, query)
            hits = search_assertions(db, config, ctx, query)
            assert nearest and set(nearest) <= allowed, query
            assert hits and {h.id for h in hits} <= allowed, query


# --- the caller's transaction ------------------------------------------------------------


_SEARCH_SETTINGS = ("enable_seqscan", "plan_cache_mode", "max_parallel_workers_per_gather",
                      "hnsw.iterative_scan", "hnsw.ef_search")


def _current(db) -> tuple[str, ...]:
    return db.execute("SELECT array_agg(current_setting(name, true) ORDER BY n)"
                      "  FROM unnest(%s::text[]) WITH ORDINALITY AS s(name, n)",
                      (list(_SEARCH_SETTINGS),)).fetchone()[0]


def test_search_hands_the_callers_transaction_its_settings_back(db, hnsw, corpus):
    with db.transaction():
        db.execute("SET LOCAL hnsw.ef_search = 77")
        before = _current(db)
        hits = search_assertions(db, hnsw, corpus.ada, "payroll audit")
        after = _current(db)
    assert hits and after == before
    assert before[0] == "on" and before[-1] == "77"


# --- the chunk search statement ----------------------------------------------------------


def test_callers_of_one_shape_share_a_statement_but_see_only_their_own_rows(db, settings,
                                                                           monkeypatch):
    # The statement text is composed once per context shape and reused: the users' values
    # must travel as parameters, never in the text, and never from the previous caller.
    instance = f"shape-{uuid.uuid4().hex[:12]}"
    users = [AccessContext(instance, user_id=f"user-{i}-{uuid.uuid4().hex[:6]}")
             for i in range(3)]
    mine = {u.user_id: store_memory(db, settings, u, MemoryWrite(
                f"Private locker code of {u.user_id} is 4711.", source_type="manual",
                visibility="private")).id
            for u in users}
    monkeypatch.setattr(search, "_STATEMENTS", ShapeCache())
    for _ in range(2):  # the second round runs the cached statements
        for user in users:
            hits = search_memories(db, settings, user, "locker code 4711", stamp=False)
            assert [h.memory_id for h in hits] == [mine[user.user_id]]
    assert len(search._STATEMENTS.statements) == 1  # three users, one shape, one text
    for statement in search._STATEMENTS.values():
        assert all(u.user_id.encode() not in statement.text for u in users)
        assert instance.encode() not in statement.text
        assert set(statement.roles) <= {
            "instance", "user", "channels", "scopes", "generating", "qv", "keyword_cap",
            "context_weight", "terms_list", "terms_weights", "generating_list",
            "generating_weights"}


def test_the_vector_arms_limit_is_a_literal(db, settings, corpus, monkeypatch):
    # With `LIMIT $n` the generic plan assumed a tenth of the visible rows and sorted all of
    # them exactly instead of walking the HNSW index (docs/benchmarks.md).
    monkeypatch.setattr(search, "_STATEMENTS", ShapeCache())
    search_memories(db, settings, corpus.ada, "VAT filing Mandant Nord", limit=6, stamp=False)
    (statement,) = search._STATEMENTS.values()
    cap = 6 + settings.retrieval_vector_extra_candidates  # the limit and the extra candidates
    assert f"::halfvec(1536)) LIMIT {cap}".encode() in statement.text
    assert "vector_cap" not in statement.roles
