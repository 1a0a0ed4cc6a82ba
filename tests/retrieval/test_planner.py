"""The search settings block (planner_settings): in force inside, the caller's values
afterwards, whether the block ends normally or fails, inside or outside the caller's
transaction."""

from __future__ import annotations

import pytest
from psycopg.pq import TransactionStatus

from memory_platform.features.retrieval.planner import planner_settings


def _current(db) -> tuple[str, str, str]:
    return db.execute("SELECT current_setting('enable_seqscan'),"
                      " current_setting('plan_cache_mode'),"
                      " current_setting('hnsw.ef_search', true)").fetchone()


def test_the_settings_hold_inside_the_block_only(db):
    with db.transaction():
        db.execute("SET LOCAL hnsw.ef_search = 77")
        before = _current(db)
        with planner_settings(db, 64):
            inside = _current(db)
        after = _current(db)
    assert inside == ("off", "force_generic_plan", "64")
    assert before == after == ("on", "auto", "77")


def test_outside_a_transaction_the_block_is_one(db):
    with planner_settings(db, 64):
        assert db.info.transaction_status == TransactionStatus.INTRANS
        inside = _current(db)
    assert db.info.transaction_status == TransactionStatus.IDLE
    assert inside[:2] == ("off", "force_generic_plan")
    assert _current(db)[:2] == ("on", "auto")


def test_a_failing_block_leaves_the_callers_settings(db):
    with db.transaction():
        before = _current(db)
        with pytest.raises(ZeroDivisionError), planner_settings(db, 64):
            db.execute("SELECT 1")
            raise ZeroDivisionError
        assert _current(db) == before


def test_the_candidate_list_stays_within_pgvectors_limit(db):
    # A caller asking for more rows than pgvector's largest list gets the iterative scan's.
    with planner_settings(db, 5000):
        assert _current(db)[2] == "1000"


def test_a_placeholder_setting_from_before_pgvector_loaded_is_given_back_as_its_default(
        module_database_url):
    # A pooled session whose earlier transaction set hnsw.* before pgvector was loaded keeps
    # an empty placeholder; restoring "" after the search loaded pgvector failed (found by
    # the API fuzz test as a 500 on /api/v1/context/search).
    import psycopg
    from pgvector.psycopg import register_vector

    with psycopg.connect(module_database_url) as fresh:
        register_vector(fresh)
        with fresh.transaction():
            fresh.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        assert fresh.execute("SELECT current_setting('hnsw.iterative_scan', true)"
                             ).fetchone()[0] == ""
        with fresh.transaction():
            with planner_settings(fresh, 40):
                fresh.execute("SELECT '[1,0]'::vector <=> '[0,1]'::vector")  # loads pgvector
            assert fresh.execute("SELECT current_setting('hnsw.iterative_scan')"
                                 ).fetchone()[0] == "off"
