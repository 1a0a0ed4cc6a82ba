"""The conversational benchmark's runner: seeding in both ways in, the metrics on hand-made
rankings, variants, reuse, cleanup and the command lines, over a tiny hand-made corpus (two
conversations of two sessions) and a real database with hash embeddings."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from bench import conversations as bench_conversations
from memory_platform.cli import main as cli_main
from memory_platform.cli.bench import user_keys
from memory_platform.features.benchmarks.conversations import evaluate
from memory_platform.features.benchmarks.conversations.corpus import (
    Conversation,
    Question,
    Session,
    Turn,
)
from memory_platform.features.benchmarks.conversations.report import (
    QuestionResult,
    VariantReport,
    evidence_ranks,
    markdown_table,
    metrics,
)
from memory_platform.features.benchmarks.conversations.variants import (
    DEFAULT_VARIANTS,
    Variant,
    parse_variant,
)
from memory_platform.foundation.settings import Settings, get_settings
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider
from tests.api.conftest import make_settings, open_client
from tests.support.environment import clean_environment  # noqa: F401
from tests.support.settings import hash_embedding_settings

START = datetime(2024, 3, 4, 18, 0, tzinfo=UTC)
REPEATED = "Sounds good, talk soon."
# What the cleanup leaves: the append-only ledger of the facts the turns are (assertions, the
# review decisions, their evidence and its sources) and the instance's embedding generation.
# The ledger stays (immutable sources, assertions and their decisions, their recorded
# history: migration 0021), and with it the graph jobs its triggers queued for those
# assertions (migration 0020).
LEDGER = {"agent_memory_assertions", "agent_memory_assertion_reviews",
          "agent_memory_assertion_evidence", "agent_memory_assertion_embeddings",
          "agent_memory_sources", "agent_memory_embedding_generations",
          "agent_memory_ingestion_outbox", "agent_memory_assertion_history",
          "agent_memory_events",
          # the storage quota's counter of each writer (migration 0030), zero once the
          # memories are gone; erasure deletes it with the person
          "agent_storage_usage"}


def _conversation(key: str, speakers: tuple[str, str], sessions: list[list[str]],
                  questions: list[tuple[str, str, tuple[str, ...]]]) -> Conversation:
    """Alternating speakers; session n starts n weeks after START, turns a minute apart."""
    built = []
    for number, texts in enumerate(sessions, 1):
        began = START + timedelta(weeks=number - 1)
        turns = tuple(Turn(f"{key}:s{number}:t{i}", number, i, speakers[i % 2], text,
                           began + timedelta(minutes=i)) for i, text in enumerate(texts))
        built.append(Session(number, began, turns))
    asked = tuple(Question(f"{key}:q{i}", key, category, text, evidence, "")
                  for i, (category, text, evidence) in enumerate(questions))
    return Conversation(key, "en" if key.startswith("en") else "de", speakers, tuple(built),
                        asked)


EN_SESSIONS = [
    ["I adopted a grey cat called Pixel last week.",
     "Nice! I started learning the cello in January.", REPEATED],
    ["Pixel knocked my coffee off the desk this morning.",
     "My cello teacher moved to Leipzig.", REPEATED],
]
EN_QUESTIONS = [
    ("single_hop", "What is the name of Anna's cat?", ("en-01:s1:t0",)),
    ("multi_hop", "When did Ben start the cello and where does his teacher live now?",
     ("en-01:s1:t1", "en-01:s2:t1")),
    ("temporal", "What did the cat knock off the desk?", ("en-01:s2:t0",)),
]
CORPUS = [
    _conversation("en-01", ("Anna", "Ben"), EN_SESSIONS, EN_QUESTIONS),
    _conversation("de-01", ("Lena", "Tom"), [
        ["Ich fahre im Mai mit dem Fahrrad an den Bodensee.",
         "Meine Schwester heiratet im Juli in Hamburg."],
        ["Das Fahrrad hat jetzt neue Bremsen.", "Die Hochzeit wurde auf August verschoben."],
    ], [
        ("single_hop", "Wohin fährt Lena mit dem Fahrrad?", ("de-01:s1:t0",)),
        ("adversarial", "Wann heiratet Lenas Schwester?", ("de-01:s1:t1",)),
    ]),
]


def _provider(settings: Settings) -> HashEmbeddingProvider:
    return HashEmbeddingProvider(settings.hash_embedding_dimensions)


def _instance_rows(conn: psycopg.Connection, instance: str) -> dict[str, int]:
    """Rows of ``instance`` in every table that has an instance_key (non-empty ones)."""
    tables = [row[0] for row in conn.execute(
        "SELECT c.table_name FROM information_schema.columns c"
        " JOIN information_schema.tables t USING (table_schema, table_name)"
        " WHERE c.table_schema = 'public' AND c.column_name = 'instance_key'"
        " AND t.table_type = 'BASE TABLE' ORDER BY 1")]
    counts = {table: conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE instance_key = %s")
                                  .format(sql.Identifier(table)), (instance,)).fetchone()[0]
              for table in tables}
    return {table: n for table, n in counts.items() if n}


def _assert_seeded(conn: psycopg.Connection, instance: str,
                   turns_of: dict[str, list[str]]) -> None:
    """One memory per distinct turn text of each user, holding the first such turn's time
    and session; the repeated text is one memory standing for both of its turns. Each is a
    conversation turn: linked to the turn before it in its session."""
    turns = {t.id: (c, t) for c in CORPUS for t in c.turns()}
    assert sorted(t for ts in turns_of.values() for t in ts) == sorted(turns)
    rows = conn.execute("SELECT id::text, user_id, content, occurred_at, session_key,"
                        " visibility_scope, previous_memory_id::text FROM agent_memories"
                        " WHERE instance_key = %s", (instance,)).fetchall()
    assert len(rows) == len(turns_of) == len(turns) - 1
    memory_of = {turn: memory_id for memory_id, ts in turns_of.items() for turn in ts}
    for memory_id, user, content, occurred_at, session, visibility, previous in rows:
        conversation, first = turns[turns_of[memory_id][0]]
        assert (user, content, occurred_at, session, visibility) == (
            f"bench-conv-{conversation.key}", first.content(), first.occurred_at,
            f"{conversation.key}-s{first.session:02d}", "private")
        before = f"{conversation.key}:s{first.session}:t{first.index - 1}"
        assert previous == (memory_of[before] if first.index else None)
    assert ["en-01:s1:t2", "en-01:s2:t2"] in turns_of.values()


# --- metrics: pure functions ----------------------------------------------------------------


def test_a_question_with_one_evidence_turn_at_rank_3_and_one_missing():
    result = QuestionResult("q", "en-01", "multi_hop", ("a", "b"), (3, None))
    assert result.recall(1) == 0
    assert result.recall(6) == 0.5
    assert result.recall(10) == 0.5
    assert result.reciprocal_rank() == pytest.approx(1 / 3)
    assert QuestionResult("q", "c", "temporal", ("a",), (11,)).reciprocal_rank() == 0


def test_evidence_ranks_map_memories_to_every_turn_they_hold():
    turns_of = {"m1": ["x"], "m2": ["b", "a"], "m3": ["c"]}
    assert evidence_ranks(("a", "b", "d"), ["m1", "m2", "m9"], turns_of) == (2, 2, None)


def test_metrics_average_per_category_and_mark_empty_categories():
    report = VariantReport("default", {}, [
        QuestionResult("q1", "c", "single_hop", ("a",), (1,)),
        QuestionResult("q2", "c", "single_hop", ("b",), (None,)),
        QuestionResult("q3", "c", "multi_hop", ("a", "b"), (3, None)),
    ])
    rows = report.summary()["by_category"]
    assert rows["single_hop"] == {"n": 2, "R@1": 0.5, "R@6": 0.5, "R@10": 0.5, "MRR@10": 0.5}
    assert rows["all"]["n"] == 3
    assert rows["all"]["R@6"] == pytest.approx((1 + 0 + 0.5) / 3, abs=1e-4)
    assert rows["all"]["MRR@10"] == pytest.approx((1 + 0 + 1 / 3) / 3, abs=1e-4)
    assert rows["temporal"] == {"n": 0, **metrics([])}
    table = markdown_table(report)
    assert "| temporal | 0 | - | - | - | - |" in table
    assert "| all | 3 | 0.333 | 0.500 | 0.500 | 0.444 |" in table


# --- variants -------------------------------------------------------------------------------


def test_parse_variant_checks_names_types_and_bounds():
    assert parse_variant("kw=retrieval_vector_weight:0,retrieval_keyword_weight:1") == Variant(
        "kw", {"retrieval_vector_weight": 0.0, "retrieval_keyword_weight": 1.0})
    assert parse_variant("plain") == Variant("plain")
    for bad in ("x=retrieval_vector_weight:2", "x=no_such_setting:1", "x=retrieval_top_k:[1]",
                "=retrieval_top_k:3", "x=retrieval_top_k"):
        with pytest.raises(ValueError):
            parse_variant(bad)


class _RecordingCaller:
    """Answers nothing; records the weights each question was ranked with."""

    def __init__(self) -> None:
        self.weights: list[tuple[float, float]] = []

    def ask(self, user: str, question: str, settings: Settings) -> list[str]:
        self.weights.append((settings.retrieval_vector_weight,
                             settings.retrieval_keyword_weight))
        return []


def test_a_variant_changes_the_settings_questions_are_ranked_with():
    caller = _RecordingCaller()
    base = Settings(_env_file=None)  # type: ignore[call-arg]
    report = evaluate.ask(caller, base, CORPUS, {}, DEFAULT_VARIANTS[1])
    assert set(caller.weights) == {(0.0, 1.0)}
    assert len(report.results) == 5 and report.overrides == DEFAULT_VARIANTS[1].overrides
    assert (base.retrieval_vector_weight, base.retrieval_keyword_weight) == (0.8, 0.2)


# --- seeding, asking, reuse and cleanup on a real database -----------------------------------


def test_library_seed_writes_one_memory_per_distinct_turn(conn, database_url, instance):
    settings = hash_embedding_settings(database_url)
    caller = evaluate.LibraryCaller(conn, settings, instance, _provider(settings))
    lines: list[str] = []
    turns_of = evaluate.seed(caller, CORPUS, echo=lines.append)
    _assert_seeded(conn, instance, turns_of)
    assert lines == ["  10/10 turns written (" + lines[0].split("(")[1]]
    assert evaluate.seeded_turns(conn, instance, CORPUS) == turns_of


def test_api_seed_writes_the_same_through_user_keys_deleted_afterwards(
        conn, database_url, instance, tmp_path):
    with open_client(make_settings(database_url, tmp_path / "state")) as client, \
            user_keys(conn, instance) as token_for:
        caller = evaluate.ApiCaller(evaluate.ApiAccess(client, token_for))
        turns_of = evaluate.seed(caller, CORPUS, echo=lambda _: None)
        answered = caller.ask("bench-conv-en-01", "What is the name of Anna's cat?",
                              hash_embedding_settings(database_url))
        assert conn.execute("SELECT count(*) FROM api_keys WHERE instance_key = %s",
                            (instance,)).fetchone()[0] == 2
    _assert_seeded(conn, instance, turns_of)
    assert answered and all(memory_id in turns_of for memory_id in answered)
    assert conn.execute("SELECT count(*) FROM api_keys WHERE instance_key = %s",
                        (instance,)).fetchone()[0] == 0
    # Memory writes and reads that name a session join nobody (only a session append does:
    # docs/sessions.md, "Who owns a session").
    assert conn.execute("SELECT count(*) FROM agent_session_participants"
                        " WHERE instance_key = %s", (instance,)).fetchone()[0] == 0


def test_a_library_run_ranks_under_each_variant_and_leaves_only_the_ledger(
        conn, database_url, instance):
    settings = hash_embedding_settings(database_url)
    nothing = parse_variant("nothing=retrieval_turn_vector_weight:0,"
                            "retrieval_turn_keyword_weight:0,"
                            "retrieval_turn_coverage_weight:0")  # the turns' own weights
    result = evaluate.run(conn, settings, _provider(settings), CORPUS,
                          variants=[Variant("default"), nothing], instance_key=instance,
                          echo=lambda _: None)
    default, empty = (r.summary()["by_category"]["all"] for r in result.reports)
    assert default["n"] == empty["n"] == 5
    assert default["R@10"] > 0.5 and default["MRR@10"] > 0
    assert empty["R@10"] == empty["MRR@10"] == 0  # every score is 0: below retrieval_min_score
    assert result.corpus == {"conversations": 2, "turns": 10, "questions": 5, "memories": 9}
    payload = result.as_json()
    assert [s["variant"] for s in payload["summaries"]] == ["default", "nothing"]
    assert len(payload["questions"]["default"]) == 5
    assert set(_instance_rows(conn, instance)) <= LEDGER


def test_reuse_finds_the_kept_turns_and_writes_only_missing_ones(conn, database_url,
                                                                   instance):
    settings = hash_embedding_settings(database_url)
    quiet = {"instance_key": instance, "echo": lambda _: None,
             "variants": [Variant("default")]}
    first = evaluate.run(conn, settings, _provider(settings), CORPUS, keep=True, **quiet)
    assert first.written_turns == 10
    again = evaluate.run(conn, settings, _provider(settings), CORPUS, reuse=True, keep=True,
                         **quiet)
    assert again.written_turns == 0 and again.corpus == first.corpus
    assert [q.ranks for q in again.reports[0].results] == [
        q.ranks for q in first.reports[0].results]

    edited = _conversation("en-01", ("Anna", "Ben"), [
        ["I adopted a black cat called Pixel last week.", *EN_SESSIONS[0][1:]],
        EN_SESSIONS[1]], EN_QUESTIONS)
    lines: list[str] = []
    third = evaluate.run(conn, settings, _provider(settings), [edited, CORPUS[1]], reuse=True,
                         **{**quiet, "echo": lines.append})
    assert third.written_turns == 1
    assert any(line.startswith("note: 1 other memories") for line in lines)  # the grey cat
    assert "agent_memories" not in _instance_rows(conn, instance)  # the last run cleaned up


def test_an_api_run_also_leaves_only_the_append_only_ledger(conn, database_url, instance,
                                                        tmp_path):
    settings = hash_embedding_settings(database_url)
    with open_client(make_settings(database_url, tmp_path / "state")) as client, \
            user_keys(conn, instance) as token_for:
        api = evaluate.ApiAccess(client, token_for)
        result = evaluate.run(conn, settings, _provider(settings), CORPUS, via="api", api=api,
                              instance_key=instance, echo=lambda _: None)
    assert [r.variant for r in result.reports] == ["server"]
    assert result.reports[0].summary()["by_category"]["all"]["R@10"] > 0.5
    assert set(_instance_rows(conn, instance)) <= LEDGER
    with pytest.raises(ValueError, match="via='library'"):
        evaluate.run(conn, settings, _provider(settings), CORPUS, via="api", api=api,
                     variants=DEFAULT_VARIANTS, instance_key=instance)


# --- command lines --------------------------------------------------------------------------


@pytest.fixture
def cli(monkeypatch, database_url: str, tmp_path: Path) -> CliRunner:
    """The CLI over the test's database, generating the hand-made corpus."""
    monkeypatch.setenv("MEMORY_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_DATA_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(evaluate, "default_corpus",
                        lambda count, seed=14: CORPUS[:count])
    get_settings.cache_clear()
    return CliRunner()


def test_help_of_both_command_lines(capsys):
    result = CliRunner().invoke(cli_main, ["bench", "retrieval", "--help"])
    assert result.exit_code == 0 and "--suite [fixtures|conversations]" in result.output
    with pytest.raises(SystemExit) as exited:
        bench_conversations.main(["--help"])
    assert exited.value.code == 0 and "--reuse URL" in capsys.readouterr().out


@pytest.mark.parametrize("via", ["library", "api"])
def test_cli_conversation_suite_end_to_end(cli, tmp_path, via):
    """``--via api`` starts the real API on loopback (a subprocess) over the test database."""
    result = cli.invoke(cli_main, [
        "bench", "retrieval", "--suite", "conversations", "--conversations", "1",
        "--provider", "hash", "--via", via, "--output-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "| all | 3 |" in result.output
    written = json.loads((tmp_path / f"conversations-hash-{via}.json").read_text())
    assert written["via"] == via and written["corpus"]["conversations"] == 1
    variants = [s["variant"] for s in written["summaries"]]
    assert variants == (["server"] if via == "api" else [v.name for v in DEFAULT_VARIANTS])


def test_cli_refuses_conversation_options_where_they_mean_nothing(cli):
    fixtures = cli.invoke(cli_main, ["bench", "retrieval", "--via", "api"])
    assert fixtures.exit_code == 2 and "--suite conversations" in fixtures.output
    api = cli.invoke(cli_main, ["bench", "retrieval", "--suite", "conversations", "--via",
                                "api", "--variant", "kw=retrieval_vector_weight:0"])
    assert api.exit_code == 2 and "--via library" in api.output
    bad = cli.invoke(cli_main, ["bench", "retrieval", "--suite", "conversations",
                                "--variant", "kw=retrieval_vector_weight:7"])
    assert bad.exit_code == 2 and "less than or equal to 1" in bad.output


def test_bench_program_runs_in_a_given_database(monkeypatch, database_url, tmp_path, capsys):
    monkeypatch.setattr(evaluate, "default_corpus", lambda count, seed=14: CORPUS[:count])
    assert bench_conversations.main(["--reuse", database_url, "--conversations", "2",
                                     "--variant", "default", "--output-dir",
                                     str(tmp_path)]) == 0
    written = json.loads((tmp_path / "conversations-hash-library.json").read_text())
    assert written["corpus"]["questions"] == 5 and written["machine"]["cores"]
    assert "| all | 5 |" in capsys.readouterr().out


def test_library_and_api_rank_the_same_corpus_alike(conn, database_url, tmp_path):
    """Both ways in write the same turns (facts of class explicit): the library numbers are
    the API's, minus HTTP."""
    settings = hash_embedding_settings(database_url)
    library = evaluate.run(conn, settings, _provider(settings), CORPUS,
                           variants=[Variant("default")], instance_key="conv-library",
                           echo=lambda _: None)
    with open_client(make_settings(database_url, tmp_path / "state")) as client, \
            user_keys(conn, "conv-api") as token_for:
        api = evaluate.run(conn, settings, _provider(settings), CORPUS, via="api",
                           api=evaluate.ApiAccess(client, token_for), instance_key="conv-api",
                           echo=lambda _: None)
    assert [q.ranks for q in api.reports[0].results] == [
        q.ranks for q in library.reports[0].results]
