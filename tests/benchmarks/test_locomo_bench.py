"""``python -m bench.locomo`` without LoCoMo's data: a tiny hand-made pair of conversations in
LoCoMo's JSON shapes, read, ranked by the metrics and by BM25, and run end to end in both
ways in (the library in this process; the real API as a subprocess on loopback) over a real
database with hash embeddings."""

from __future__ import annotations

import json
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from psycopg import sql

from bench import locomo
from bench.locomo_data import CATEGORY_NAMES, evidence_ids, load, session_time
from bench.locomo_metrics import BM25, cross_validated, fold_of, metrics, ranked
from memory_platform.features.benchmarks.conversations.corpus import Conversation
from tests.support.environment import clean_environment  # noqa: F401


def _session(number: int, speakers: tuple[str, str], texts: list[str]) -> list[dict]:
    turns = []
    for index, text in enumerate(texts, 1):
        turn = {"speaker": speakers[(index - 1) % 2], "dia_id": f"D{number}:{index}",
                "text": text}
        if text.endswith("Look!"):
            turn["blip_caption"] = "a photo of a red kayak on a lake"
        turns.append(turn)
    return turns


def _conversation(a: str, b: str, first: list[str], second: list[str],
                  qa: list[dict]) -> dict:
    return {"speaker_a": a, "speaker_b": b,
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": _session(1, (a, b), first),
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": _session(2, (a, b), second),
            "session_3_date_time": "9:00 am on 1 July, 2023",  # announced, never held
            "qa": qa}


ONE = _conversation(
    "Caroline", "Melanie",
    ["Hey Mel! I went to a pottery workshop with my cousin yesterday.",
     "Fun! What did you make there?",
     "A wobbly blue vase for my grandmother.",
     "I finally signed up for the marathon in Lisbon."],
    ["I bought a kayak last weekend. Look!",
     "Wow, where will you paddle?",
     "On the lake behind the old mill, every Sunday."],
    [{"question": "What did Caroline make at the pottery workshop?", "answer": "a vase",
      "evidence": ["D1:3"], "category": 4},
     {"question": "When did Caroline buy a kayak?", "answer": "June 2023",
      "evidence": ["D:2:1"], "category": 2},
     {"question": "What hobbies does Caroline have?", "answer": "pottery, kayaking",
      "evidence": ["D1:1; D2:1"], "category": 1},
     {"question": "Would Caroline enjoy a lake holiday?", "answer": "likely yes",
      "evidence": ["D2:3"], "category": 3},
     {"question": "Which marathon did Caroline sign up for?", "adversarial_answer": "Lisbon",
      "evidence": ["D1:4"], "category": 5},
     {"question": "Is this question without evidence dropped?", "answer": "yes",
      "evidence": [], "category": 3}])
TWO = _conversation(
    "Jon", "Gina",
    ["Gina, my dance studio opens on Friday!",
     "Congratulations, Jon! Which dances will you teach?",
     "Tango and salsa, mostly for beginners."],
    ["The studio's first month went well: forty students.",
     "I started selling handmade scarves online.",
     "Scarves? Which colours?"],
    [{"question": "Which dances does Jon teach at his studio?", "answer": "tango, salsa",
      "evidence": ["D1:3"], "category": 4},
     {"question": "What does Gina sell online?", "answer": "scarves",
      "evidence": ["D2:2", "D9:9"], "category": 4}])


def _as_locomo10(path: Path) -> Path:
    """The two conversations as ``locomo10.json``: a list of samples."""
    path.write_text(json.dumps([
        {"sample_id": "conv-t1", "conversation": {k: v for k, v in ONE.items() if k != "qa"},
         "qa": ONE["qa"]},
        {"sample_id": "conv-t2", "conversation": {k: v for k, v in TWO.items() if k != "qa"},
         "qa": TWO["qa"]}]))
    return path


def _as_zip(path: Path) -> Path:
    """The two conversations as the GitHub zip holds them: one file each, numbered."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data/multimodal_dialog/locomo10_v2/30.json", json.dumps(TWO))
        archive.writestr("data/multimodal_dialog/locomo10_v2/26.json", json.dumps(ONE))
    return path


# --- reading --------------------------------------------------------------------------------


def test_session_times_are_read_as_utc():
    assert session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert session_time("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9,
                                                                        tzinfo=UTC)
    with pytest.raises(ValueError, match="unreadable session time"):
        session_time("sometime in May")


def test_evidence_ids_are_normalised():
    assert evidence_ids(["D8:6; D9:17", "D:11:26", "D30:05", "D", "D8:6"]) == [
        "D8:6", "D9:17", "D11:26", "D30:5"]


def test_categories_are_named_as_the_data_uses_them():
    assert CATEGORY_NAMES == {1: "multi_hop", 2: "temporal", 3: "open_domain",
                              4: "single_hop", 5: "adversarial"}


def test_realtalk_dates_are_read_as_utc():
    assert session_time("29.12.2023, 22:42:04") == datetime(2023, 12, 29, 22, 42, 4,
                                                             tzinfo=UTC)


def test_evidence_written_by_hand_is_read():
    assert evidence_ids(["D12:3-D12:5", "D 2:18", "D5:3.", "D13:45:D20:19",
                         "D14:8-D15:2"]) == [
        "D12:3", "D12:4", "D12:5", "D2:18", "D5:3", "D13:45", "D20:19", "D14:8", "D15:2"]


def _realtalk_chat(a: str, b: str, turns: list[tuple[str, str, str]],
                   qa: list[dict]) -> dict:
    """A chat in REALTALK's shape: speakers under ``name``, ``clean_text``, each turn dated,
    dialogue ids that do not follow the session numbers."""
    return {"name": {"speaker_1": a, "speaker_2": b},
            "session_1_date_time": turns[0][0],
            "session_1": [{"clean_text": text, "speaker": (a, b)[i % 2], "date_time": when,
                           "img_file": [], "dia_id": dia}
                          for i, (when, dia, text) in enumerate(turns)],
            "events_session_1": {"agent_a": [], "agent_b": []},
            "qa": qa}


def test_realtalk_chats_are_read_like_locomo(tmp_path):
    for number, chat in ((10, _realtalk_chat("Fahim", "Muhhamed", [
            ("29.12.2023, 01:06:59", "D1:1", "I adopted a grey kitten today!"),
            ("29.12.2023, 01:09:10", "D1:2", "What is its name?")],
            [{"question": "What did Fahim adopt?", "answer": "a kitten",
              "evidence": ["D1:1-D1:2"], "category": 1}])),
            (2, _realtalk_chat("Kevin", "Elise", [
                ("30.12.2023, 22:21:48", "D3:30", "Hey!"),
                ("30.12.2023, 23:02:00", "D3:31", "I went to Art Basel in Miami.")],
                [{"question": "When did Elise visit Art Basel?", "answer": "30 December",
                  "evidence": ["D3:31."], "category": 2}]))):
        (tmp_path / f"Chat_{number}_{chat['name']['speaker_1']}.json").write_text(
            json.dumps(chat))
    loaded = load(tmp_path)
    assert loaded.dataset == "REALTALK"
    kevin, fahim = loaded.conversations  # by the chat's number, not as text sorts
    assert kevin.speakers == ("Kevin", "Elise") and fahim.speakers == ("Fahim", "Muhhamed")
    said = kevin.sessions[0].turns[1]
    assert said.text == "I went to Art Basel in Miami."
    assert said.occurred_at == datetime(2023, 12, 30, 23, 2, tzinfo=UTC)  # the turn's own time
    assert kevin.questions[0].evidence == (said.id,)
    assert kevin.questions[0].category == "temporal"
    assert fahim.questions[0].evidence == (f"{fahim.key}:D1:1", f"{fahim.key}:D1:2")
    assert loaded.dropped_evidence == 0 and loaded.dropped_questions == 0


@pytest.mark.parametrize("shape", ["locomo10.json", "zip"])
def test_both_shapes_read_alike(tmp_path, shape):
    path = (_as_locomo10(tmp_path / "locomo10.json") if shape == "locomo10.json"
            else _as_zip(tmp_path / "locomo10.zip"))
    loaded = load(path)
    assert loaded.dataset == "LoCoMo"
    first, second = loaded.conversations
    assert first.speakers == ("Caroline", "Melanie") and second.speakers == ("Jon", "Gina")
    assert [len(s.turns) for s in first.sessions] == [4, 3]  # session 3 was never held
    kayak = first.sessions[1].turns[0]
    assert kayak.id.endswith(":D2:1")
    assert kayak.text == ("I bought a kayak last weekend. Look! "
                          "[shares a photo: a photo of a red kayak on a lake]")
    assert kayak.occurred_at == datetime(2023, 6, 27, 10, 37, tzinfo=UTC)
    assert first.sessions[1].turns[2].occurred_at == kayak.occurred_at + timedelta(seconds=60)
    questions = {q.text: q for q in first.questions}
    assert questions["When did Caroline buy a kayak?"].category == "temporal"
    assert questions["What hobbies does Caroline have?"].evidence == (
        f"{first.key}:D1:1", f"{first.key}:D2:1")
    assert len(first.questions) == 5 and loaded.dropped_questions == 1
    assert second.questions[1].evidence == (f"{second.key}:D2:2",)
    assert loaded.dropped_evidence == 1
    assert load(path, captions=False).conversations[0].sessions[1].turns[0].text == (
        "I bought a kayak last weekend. Look!")


# --- the numbers ----------------------------------------------------------------------------


def test_turn_and_session_recall_and_mrr_of_one_question():
    result = ranked("q", "c", "multi_hop", "A", ["c:D1:3", "c:D4:2"],
                    [["c:D2:1"], ["c:D4:7", "c:D1:9"], ["c:D1:3"]])
    assert result.ranks == (3, None) and result.session_ranks == (2, 2)
    assert result.recall(1) == 0 and result.recall(3) == 0.5
    assert result.session_recall(1) == 0 and result.session_recall(3) == 1.0
    assert result.reciprocal_rank() == pytest.approx(1 / 3)
    row = metrics([result, ranked("q2", "c", "temporal", "A", ["c:D1:1"], [])])
    assert row["R@3"] == 0.25 and row["sR@3"] == 0.5 and row["MRR@10"] == pytest.approx(
        1 / 6, abs=1e-4)


def test_folds_choose_on_one_half_and_report_the_other():
    assert [fold_of(i, 10) for i in range(10)] == ["A"] * 5 + ["B"] * 5
    hit, miss = [["c:D1:1"]], [["c:D9:9"]]
    per_variant = {
        "good-on-A": [ranked("a", "c", "single_hop", "A", ["c:D1:1"], hit),
                      ranked("b", "c", "single_hop", "B", ["c:D1:1"], miss)],
        "good-on-B": [ranked("a", "c", "single_hop", "A", ["c:D1:1"], miss),
                      ranked("b", "c", "single_hop", "B", ["c:D1:1"], hit)],
    }
    chosen = cross_validated(per_variant)
    assert chosen["chosen_on_A"]["variant"] == "good-on-A"
    assert chosen["chosen_on_A"]["held_out_B"]["R@10"] == 0.0
    assert chosen["chosen_on_B"]["variant"] == "good-on-B"
    assert chosen["chosen_on_B"]["held_out_A"]["R@10"] == 0.0


def test_bm25_ranks_the_turn_with_the_rare_words_first():
    index = BM25([("a", "Jon: my dance studio opens on Friday"),
                  ("b", "Gina: I love dance, dance, dance"),
                  ("c", "Jon: tango and salsa for beginners")])
    assert index.top("Which tango classes for beginners?", 10) == ["c"]
    assert index.top("dance studio", 2) == ["a", "b"]
    assert index.top("nothing matches", 10) == []


# --- end to end -------------------------------------------------------------------------------


def _run(database_url: str, data: Path, output: Path, *extra: str) -> dict:
    printed: list[str] = []
    assert locomo.main(["--data", str(data), "--provider", "hash", "--reuse", database_url,
                        "--output-dir", str(output), *extra], echo=printed.append) == 0
    via = extra[extra.index("--via") + 1]
    written = json.loads((output / f"locomo-hash-{via}.json").read_text())
    written["printed"] = "\n".join(printed)
    return written


def test_library_run_end_to_end_with_variants_folds_and_bm25(database_url, tmp_path):
    written = _run(database_url, _as_zip(tmp_path / "locomo10.zip"), tmp_path, "--via",
                   "library", "--folds", "--variant", "default", "--variant",
                   "keyword-only=retrieval_turn_vector_weight:0,retrieval_turn_keyword_weight:1")
    assert written["corpus"]["turns"] == 13 and written["corpus"]["questions"] == 7
    assert written["corpus"]["folds"] == {"conv-26": "A", "conv-30": "B"}
    default = written["summaries"][0]
    assert default["variant"] == "default"
    rows = default["by_category"]
    assert {name: rows[name]["n"] for name in rows} == {
        "single_hop": 3, "multi_hop": 1, "temporal": 1, "open_domain": 1, "adversarial": 1,
        "all": 7}
    assert default["by_fold"]["A"]["n"] == 5 and default["by_fold"]["B"]["n"] == 2
    # Questions that share their rare words with the one evidence turn: found first.
    ranks = {q["question"]: q["ranks"] for q in written["questions"]["default"]}
    assert ranks["conv-26:q1"] == ranks["conv-26:q4"] == ranks["conv-30:q1"] == [1]
    # The evidence sessions of the two-session question: both within the top 2.
    assert sorted({q["question"]: q["session_ranks"] for q in written["questions"]["default"]}[
        "conv-26:q2"]) == [1, 2]
    # The variant is asked under its own settings: it ranks differently.
    assert [q["ranks"] for q in written["questions"]["keyword-only"]] != list(ranks.values())
    assert written["bm25"]["by_category"]["all"]["n"] == 7
    assert {q["question"]: q["ranks"] for q in written["questions"]["bm25"]}[
        "conv-26:q1"] == [1]
    assert set(written["cross_validation"]) == {"chosen_on_A", "chosen_on_B"}
    assert "| fold B | 2 |" in written["printed"] and "BM25" in written["printed"]


def test_api_run_posts_every_turn_as_its_user_with_session_and_utc_time(
        conn, database_url, tmp_path):
    """The real API as a subprocess on loopback; the run keeps its turns to be read back, and
    ranks as the library does."""
    data = _as_locomo10(tmp_path / "locomo10.json")
    written = _run(database_url, data, tmp_path, "--via", "api", "--keep",
                   "--instance", "locomo-api")
    assert written["via"] == "api" and written["summaries"][0]["variant"] == "server"
    rows = conn.execute("SELECT user_id, session_key, occurred_at, content FROM agent_memories"
                        " WHERE instance_key = 'locomo-api' ORDER BY occurred_at").fetchall()
    assert len(rows) == 13
    assert rows[0] == ("bench-conv-conv-t1", "conv-t1-s01",
                       datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
                       "Caroline: Hey Mel! I went to a pottery workshop with my cousin "
                       "yesterday.")
    assert ("bench-conv-conv-t2", "conv-t2-s02") in {(r[0], r[1]) for r in rows}
    assert conn.execute("SELECT count(*) FROM api_keys WHERE instance_key = 'locomo-api'"
                        ).fetchone()[0] == 0
    library = _run(database_url, data, tmp_path, "--via", "library", "--instance",
                   "locomo-library")
    assert [q["ranks"] for q in library["questions"]["default"]] == [
        q["ranks"] for q in written["questions"]["server"]]


def test_sessions_run_appends_every_turn_and_asks_through_context_search(
        conn, database_url, tmp_path):
    """Issue 29.3: the same turns as session items, recalled as turns and asked through
    context search; a second run over the kept database appends nothing again (the turn id
    is the item's clientItemId) and ranks the same."""
    data = _as_locomo10(tmp_path / "locomo10.json")
    first = _run(database_url, data, tmp_path, "--via", "sessions", "--keep",
                 "--instance", "locomo-s")
    assert first["via"] == "sessions" and first["summaries"][0]["variant"] == "default"
    rows = conn.execute("SELECT user_id, session_key, occurred_at, content"
                        "  FROM agent_context_messages WHERE instance_key = 'locomo-s'"
                        " ORDER BY occurred_at").fetchall()
    assert len(rows) == 13 and rows[0][:2] == ("bench-conv-conv-t1", "conv-t1-s01")
    assert rows[0][2] == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert {q["question"]: q["ranks"] for q in first["questions"]["default"]}[
        "conv-t1:q1"] == [1]
    # Every item was recalled as a turn of its user.
    assert conn.execute("SELECT count(*) FROM agent_memories WHERE instance_key = 'locomo-s'"
                        " AND source_type = 'message'").fetchone()[0] == 13
    again = _run(database_url, data, tmp_path, "--via", "sessions", "--instance", "locomo-s")
    assert "reusing 13 stored turns" in again["printed"]
    assert [q["ranks"] for q in again["questions"]["default"]] == [
        q["ranks"] for q in first["questions"]["default"]]
    # Without --keep the run takes what it wrote with it: items, their turns, the sessions.
    for table in ("agent_context_messages", "agent_memories", "agent_session_runs"):
        assert conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE instance_key = 'locomo-s'"
                                    ).format(sql.Identifier(table))).fetchone()[0] == 0


def test_import_run_links_the_imported_turns_and_ranks_as_the_library(
        conn, database_url, tmp_path):
    """Issue 29.3: the same turns as one bulk import of JSONL rows are linked into turns and
    rank exactly as the turns written one by one."""
    data = _as_locomo10(tmp_path / "locomo10.json")
    imported = _run(database_url, data, tmp_path, "--via", "import", "--keep",
                    "--instance", "locomo-import")
    linked, stored, sessions = conn.execute(
        "SELECT count(*) FILTER (WHERE previous_memory_id IS NOT NULL), count(*),"
        " count(DISTINCT session_key) FROM agent_memories WHERE instance_key = 'locomo-import'"
        ).fetchone()
    assert stored == 13 and linked == stored - sessions   # all but each session's first turn
    assert f"{stored} turns linked" in imported["printed"]
    library = _run(database_url, data, tmp_path, "--via", "library", "--instance",
                   "locomo-lib2")
    assert [q["ranks"] for q in imported["questions"]["default"]] == [
        q["ranks"] for q in library["questions"]["default"]]


def test_help_says_how_times_are_sent(capsys):
    with pytest.raises(SystemExit) as exited:
        locomo.main(["--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0 and "UTC" in out and \
        "--via {api,library,sessions,import}" in out


def test_variants_need_the_library(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        locomo.main(["--data", str(_as_zip(tmp_path / "d.zip")), "--via", "api", "--variant",
                     "x=retrieval_turn_vector_weight:0.5"])
    assert exited.value.code == 2 and "--via library" in capsys.readouterr().err


def test_off_topic_questions_are_asked_as_the_next_conversations_user(database_url, tmp_path):
    """--off-topic: each question also as the other conversation's user (whose memories
    share no word with it here: nothing is evidence, nothing answers), per fold."""
    written = _run(database_url, _as_zip(tmp_path / "locomo10.zip"), tmp_path, "--via",
                   "library", "--off-topic", "--set", "retrieval_similarity_scale=[0.1, 0.5]")
    off = written["summaries"][0]["off_topic"]
    assert off["all"] == {"questions": 7, "answered": 0.0}
    assert off["fold A"]["questions"] == 5 and off["fold B"]["questions"] == 2
    assert "off topic, share answering anything: all 0.000" in written["printed"]


def test_off_topic_questions_go_to_a_conversation_without_their_speakers():
    """REALTALK's chats share people: a question about Elise is not off topic for another
    chat of Elise's, so the partner is the next conversation sharing no speaker (any case)."""
    def chat(key: str, a: str, b: str) -> Conversation:
        return Conversation(key, "en", (a, b), (), ())

    corpus = [chat("c1", "Emi", "elise"), chat("c2", "Kevin", "Elise"),
              chat("c3", "Kevin", "Paola"), chat("c4", "Nicolas", "Emi")]
    assert [getattr(locomo.off_topic_partner(corpus, i), "key", None) for i in range(4)] == [
        "c3", "c4", "c4", "c2"]
    assert locomo.off_topic_partner([chat("x", "A", "B"), chat("y", "b", "C")], 0) is None
