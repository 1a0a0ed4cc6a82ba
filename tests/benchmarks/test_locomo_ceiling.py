"""``python -m bench.locomo_ceiling`` without LoCoMo's data: the session orders it scores, on
hand-made hits, and a run end to end over the two hand-made conversations of the LoCoMo
benchmark's tests (real database, hash embeddings)."""

from __future__ import annotations

import json

from bench import locomo_ceiling as ceiling
from bench.locomo_data import load
from tests.benchmarks.test_locomo_bench import _as_zip
from tests.support.environment import clean_environment  # noqa: F401


def test_session_order_is_first_seen_first():
    hits = [["c:D2:4"], ["c:D2:1"], ["c:D1:7", "c:D3:2"], ["c:D1:1"]]
    assert ceiling.session_order(hits) == ["c:D2", "c:D1", "c:D3"]


def test_one_hit_per_session_keeps_the_best_turn_of_each():
    hits = [["c:D2:4"], ["c:D2:1"], ["c:D1:7"], [], ["c:D3:2"], ["c:D1:1"], ["c:D4:1"]]
    assert ceiling.best_turn_per_session(hits, 3) == [["c:D2:4"], ["c:D1:7"], ["c:D3:2"]]
    assert ceiling.best_turn_per_session(hits, 10) == [
        ["c:D2:4"], ["c:D1:7"], ["c:D3:2"], ["c:D4:1"]]


def test_fusion_lifts_a_session_both_orders_rank_well():
    # D3 is second in both orders; D1 and D2 are each first in one and absent from the other.
    assert ceiling.fused([["D1", "D3"], ["D2", "D3"]], k=1) == ["D3", "D1", "D2"]
    # A tie keeps the first order's preference.
    assert ceiling.fused([["D1", "D2"], ["D2", "D1"]]) == ["D1", "D2"]


def test_session_words_rank_the_session_that_says_it(tmp_path):
    first = load(_as_zip(tmp_path / "locomo10.zip")).conversations[0]
    index = ceiling.session_index(first)
    assert index.top("kayak lake paddle", 2)[0] == f"{first.key}:D2"
    assert index.top("pottery vase marathon", 2)[0] == f"{first.key}:D1"


def test_run_end_to_end_scores_the_four_answers(database_url, tmp_path):
    printed: list[str] = []
    assert ceiling.main(["--data", str(_as_zip(tmp_path / "locomo10.zip")), "--provider",
                         "hash", "--reuse", database_url, "--output-dir", str(tmp_path)],
                        echo=printed.append) == 0
    written = json.loads((tmp_path / "locomo-ceiling-hash.json").read_text())
    assert written["corpus"]["questions"] == 7
    assert set(written["summaries"]) == set(ceiling.ANSWERS)
    every = {name: body["by_category"]["all"] for name, body in written["summaries"].items()}
    # Two sessions per conversation: one hit per session reaches every evidence session the
    # deep ranking holds a turn of, and ten hits can hold no more sessions than that.
    assert every["one per session"]["sR@10"] == 1.0
    assert every["answer"]["sR@10"] <= every["one per session"]["sR@10"]
    # The session-words order finds the two-session question's sessions (it names both).
    assert every["session words"]["sR@10"] > 0.5
    assert 1.0 <= written["mean_sessions_in_answer"] <= 2.0
    assert "| one per session |" in written["printed"] and "sessions on average" in "\n".join(
        printed)
