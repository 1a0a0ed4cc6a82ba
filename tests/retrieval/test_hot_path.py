"""The hot-path settings block: in force inside, the caller's values afterwards, whether the
block ends normally or fails, inside or outside the caller's transaction."""

from __future__ import annotations

import pytest
from psycopg.pq import TransactionStatus

from memory_platform.retrieval.hot_path import hot_path


def _current(db) -> tuple[str, str, str]:
    return db.execute("SELECT current_setting('enable_seqscan'),"
                      " current_setting('plan_cache_mode'),"
                      " current_setting('hnsw.ef_search', true)").fetchone()


def test_the_settings_hold_inside_the_block_only(db):
    with db.transaction():
        db.execute("SET LOCAL hnsw.ef_search = 77")
        before = _current(db)
        with hot_path(db, 64):
            inside = _current(db)
        after = _current(db)
    assert inside == ("off", "force_generic_plan", "64")
    assert before == after == ("on", "auto", "77")


def test_outside_a_transaction_the_block_is_one(db):
    with hot_path(db, 64):
        assert db.info.transaction_status == TransactionStatus.INTRANS
        inside = _current(db)
    assert db.info.transaction_status == TransactionStatus.IDLE
    assert inside[:2] == ("off", "force_generic_plan")
    assert _current(db)[:2] == ("on", "auto")


def test_a_failing_block_leaves_the_callers_settings(db):
    with db.transaction():
        before = _current(db)
        with pytest.raises(ZeroDivisionError), hot_path(db, 64):
            db.execute("SELECT 1")
            raise ZeroDivisionError
        assert _current(db) == before


def test_the_candidate_list_stays_within_pgvectors_limit(db):
    # A caller asking for more rows than pgvector's largest list gets the iterative scan's.
    with hot_path(db, 5000):
        assert _current(db)[2] == "1000"
