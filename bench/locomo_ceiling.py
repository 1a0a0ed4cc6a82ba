"""How far session recall on LoCoMo can go by ordering alone: the sessions the platform's
ranking reaches at all, whatever its ten hits were given to (issue 29.2's session R@10).

Every question is asked as its conversation's user through ``search_memories`` twice: as
``python -m bench.locomo`` asks it (limit 10), and deep (limit DEEP_LIMIT, no score gate),
whose hits, read best first, put the sessions in the order the ranking prefers them.
Four answers are scored with the benchmark's own metrics (bench/locomo_metrics.py):

* ``answer``: the ten hits (session R@10 as the benchmark reports it; ``sessions``: how
  many sessions they span, on average);
* ``one per session``: the best turn of each of the ranking's first ten sessions, the most
  session recall ten hits of this ranking can have, and the turn recall it would cost;
* ``session words``: sessions ranked on their own words (BM25 with each session's turns as
  one document), one hit per session;
* ``fused``: that order and the ranking's fused by reciprocal rank (RRF_K, equal weights).

For the last three, session R@k is the share of evidence sessions among the first k
sessions. Needs a seeded corpus: ``--pgdata`` of a ``bench.locomo`` run (its turns are
reused) or a fresh one seeded here through the library.

    .venv/bin/python -m bench.locomo_ceiling --data /tmp/locomo10.zip --pgdata /tmp/lc/api_pg

Writes bench/results/locomo-ceiling-<provider>.json (``--output-dir``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from pgvector.psycopg import register_vector

from bench.common import RESULTS_DIR, fresh_database, machine_info, write_result
from bench.locomo import LibraryCaller, persistent_database, reused_database, select
from bench.locomo_data import load
from bench.locomo_metrics import BM25, Ranked, fold_of, ranked, session_of, summary
from memory_platform.features.benchmarks.conversations import evaluate
from memory_platform.features.benchmarks.conversations.corpus import Conversation
from memory_platform.features.retrieval import lexicon
from memory_platform.features.retrieval.question import embed_question
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.factory import get_provider

PROGRAM = "python -m bench.locomo_ceiling"
ASK_LIMIT = 10
DEEP_LIMIT = 200  # more than any LoCoMo conversation has sessions (19-32) times a few turns
RRF_K = 10
PROGRESS_EVERY = 250
ANSWERS = ("answer", "one per session", "session words", "fused")


def session_order(answered: Sequence[Sequence[str]]) -> list[str]:
    """The sessions of ``answered`` (each hit's turns, best first), first seen first."""
    return list(dict.fromkeys(session_of(turn) for turns in answered for turn in turns))


def best_turn_per_session(answered: Sequence[Sequence[str]], k: int) -> list[list[str]]:
    """The first hit of each of the first ``k`` sessions of ``answered``, best first."""
    seen: set[str] = set()
    chosen: list[list[str]] = []
    for turns in answered:
        sessions = {session_of(turn) for turn in turns}
        if turns and not sessions & seen:
            chosen.append(list(turns))
            seen |= sessions
            if len(chosen) == k:
                break
    return chosen


def fused(orders: Sequence[Sequence[str]], k: int = RRF_K) -> list[str]:
    """Reciprocal-rank fusion of session orders (a session absent from an order gains
    nothing from it); ties keep the first order's preference."""
    score: dict[str, float] = {}
    for order in orders:
        for position, session in enumerate(order, 1):
            score[session] = score.get(session, 0.0) + 1.0 / (k + position)
    first = {s: i for i, s in enumerate(dict.fromkeys(s for o in orders for s in o))}
    return sorted(score, key=lambda s: (-score[s], first[s]))


def as_hits(sessions: Sequence[str]) -> list[list[str]]:
    """A session order as an answer of one hit per session (a pseudo turn of each: only the
    session recall of such an answer means anything)."""
    return [[f"{session}:*"] for session in sessions]


def session_index(conversation: Conversation) -> BM25:
    """BM25 over the conversation's sessions, each its turns' stored texts as one document."""
    texts: dict[str, list[str]] = {}
    for turn in conversation.turns():
        texts.setdefault(session_of(turn.id), []).append(turn.content())
    return BM25((session, "\n".join(lines)) for session, lines in texts.items())


def _ask(conn: psycopg.Connection, settings: Settings, ctx: AccessContext, text: str,
         vector: Any, limit: int, turns_of: dict[str, list[str]],
         min_score: float | None = None) -> list[list[str]]:
    hits = search_memories(conn, settings, ctx, text, limit=limit, question=vector,
                           stamp=False, min_score=min_score)
    return [turns_of.get(str(hit.memory_id), []) for hit in hits]


def measure(conn: psycopg.Connection, settings: Settings, provider: Any, instance_key: str,
            corpus: Sequence[Conversation], folds: dict[str, str],
            turns_of: dict[str, list[str]], echo: Callable[[str], None]
            ) -> tuple[dict[str, list[Ranked]], list[int]]:
    """The four answers of every question (:data:`ANSWERS`), and how many sessions each
    question's ten hits span."""
    results: dict[str, list[Ranked]] = {name: [] for name in ANSWERS}
    spans: list[int] = []
    total, done = sum(len(c.questions) for c in corpus), 0
    for conversation in corpus:
        ctx = AccessContext(instance_key, user_id=evaluate.user_of(conversation))
        index = session_index(conversation)
        for question in conversation.questions:
            vector = embed_question(provider, question.text)
            answer = _ask(conn, settings, ctx, question.text, vector, ASK_LIMIT, turns_of)
            deep = _ask(conn, settings, ctx, question.text, vector, DEEP_LIMIT, turns_of,
                        min_score=0.0)
            by_words = index.top(question.text, ASK_LIMIT * 4)
            answers = {"answer": answer,
                       "one per session": best_turn_per_session(deep, ASK_LIMIT),
                       "session words": as_hits(by_words[:ASK_LIMIT]),
                       "fused": as_hits(fused([session_order(deep), by_words])[:ASK_LIMIT])}
            for name, answered in answers.items():
                results[name].append(ranked(question.id, conversation.key, question.category,
                                            folds[conversation.key], question.evidence,
                                            answered))
            spans.append(len(session_order(answer)))
            done += 1
            if done % PROGRESS_EVERY == 0 or done == total:
                echo(f"  {done}/{total} questions asked")
    return results, spans


def table(results: dict[str, list[Ranked]]) -> str:
    """One row per answer: turn R@10 where it means something, session R@1/3/6/10, and
    session R@10 per category."""
    categories = [c for c in summary(results["answer"])["by_category"] if c != "all"]
    lines = ["| answer | R@10 | sR@1 | sR@3 | sR@6 | sR@10 | "
             + " | ".join(f"{c} sR@10" for c in categories) + " |",
             "|---|" + "---:|" * (5 + len(categories))]
    for name, answered in results.items():
        rows = summary(answered)["by_category"]
        every = rows["all"]
        turn = f"{every['R@10']:.3f}" if name in ("answer", "one per session") else "-"
        cells = [turn, *(f"{every[m]:.3f}" for m in ("sR@1", "sR@3", "sR@6", "sR@10")),
                 *(f"{rows[c]['sR@10']:.3f}" if rows[c]["n"] else "-" for c in categories)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True,
                        help="locomo10.zip, a locomo10.json or a directory of its JSON files")
    parser.add_argument("--provider", choices=("local", "hash"), default="local",
                        help="embedding provider (local: e5-small; hash: for tests)")
    parser.add_argument("--conversations", default=None, metavar="SPEC",
                        help="a subset: positions (0,5), ranges (0-4) or sample ids (conv-26)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--pgdata", type=Path, default=None, metavar="DIR",
                        help="an embedded server's data directory of a bench.locomo run "
                        "(its seeded turns are reused; missing ones are written)")
    source.add_argument("--reuse", default=None, metavar="URL",
                        help="a database with the turns seeded (missing ones are written)")
    parser.add_argument("--instance", default=None,
                        help="instance key of the seeded turns (default bench-locomo-<provider>)")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    return parser


def main(argv: list[str] | None = None, echo: Callable[[str], None] = print) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        loaded = load(args.data)
        chosen = select(loaded.conversations, args.conversations)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    corpus = [c for _, c in chosen]
    folds = {c.key: fold_of(position, len(loaded.conversations)) for position, c in chosen}
    database = (persistent_database(args.pgdata.resolve()) if args.pgdata
                else reused_database(args.reuse) if args.reuse else fresh_database(None))
    with database as url, psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        settings = Settings(database_url=url, embedding_provider=args.provider,
                            _env_file=None)  # type: ignore[call-arg]
        provider = get_provider(settings)
        instance_key = args.instance or f"bench-locomo-{provider.provider}"
        echo(f"{len(corpus)} conversations, instance {instance_key!r}, "
             f"{provider.provider}:{provider.model}")
        caller = LibraryCaller(conn, settings, instance_key, provider)
        turns_of = evaluate.seed(caller, corpus, evaluate.seeded_turns(conn, instance_key,
                                                                       corpus), echo)
        conn.execute("ANALYZE agent_memory_chunks")
        lexicon.forget()
        results, spans = measure(conn, settings, provider, instance_key, corpus, folds,
                                 turns_of, echo)
        machine = machine_info(conn)
    printed = table(results)
    mean_span = sum(spans) / max(1, len(spans))
    echo(f"\n{printed}\n\nthe ten hits span {mean_span:.2f} sessions on average")
    payload = {"command": " ".join([PROGRAM, *(argv if argv is not None else sys.argv[1:])]),
               "provider": provider.provider, "model": provider.model,
               "instance": instance_key, "deep_limit": DEEP_LIMIT, "rrf_k": RRF_K,
               "corpus": {"conversations": [c.key for c in corpus],
                          "questions": len(spans), "memories": len(turns_of)},
               "summaries": {name: summary(answered) for name, answered in results.items()},
               "mean_sessions_in_answer": round(mean_span, 3), "printed": printed,
               "total_seconds": round(time.perf_counter() - started, 1), "machine": machine}
    target = write_result(f"locomo-ceiling-{provider.provider}", payload, args.output_dir)
    echo(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
