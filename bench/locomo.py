"""LoCoMo, the development benchmark of conversational retrieval: every turn of each of its
ten conversations stored as that conversation's user, every question asked as that user with
limit 10, and the rank of its evidence turns read off the answers.

Through the real HTTP API by default (``--via api``: ``python -m memory_platform api`` as a
subprocess on a free loopback port; each turn ``POST /api/v1/memory`` with the session's
``sessionKey`` and the turn's ``occurredAt``, each question ``GET /api/v1/memory?limit=10``,
with a user key per conversation made for the run), or in this process (``--via library``:
``store_memory`` / ``search_memories``), where one seeded corpus is asked under several
settings variants, or as session items (``--via sessions``: ``append_items``, what ``POST
/api/v1/sessions/{key}/items`` does, each turn's id its ``clientItemId``; each question
through ``context_search``: its memory arm ranks the items' recalled turns, its history arm
their words), or as one bulk import of JSONL rows (``--via import``, asked like library):
issue 29.3, every way in.
LoCoMo's session times carry no time zone: they are sent as UTC, a turn 30 seconds after the
one before it.

Prints and writes as JSON recall@1/3/6/10 and MRR@10 overall, per category (1 multi-hop,
2 temporal, 3 open-domain, 4 single-hop, 5 adversarial) and per fold, session recall@k
(the share of the question's evidence sessions some turn of the top k belongs to), and BM25
over the same turns in the same run. ``--folds``: the 2-fold split over conversations (0-4
and 5-9 of the data): the variant best on one half is reported on the other, both ways, so
a tuned weight is never reported on the conversations it was chosen on.

The data is not in the repository (licence not stated): ``fetch github:snap-research/locomo``
and pass its ``data/locomo10.zip`` (or a ``locomo10.json``, or a directory of its files).

    .venv/bin/python -m bench.locomo --data /tmp/locomo10.zip                 # API, e5-small
    .venv/bin/python -m bench.locomo --data /tmp/locomo10.zip --via library --folds \\
        --conversations 0,5 --variant w55=retrieval_turn_vector_weight:0.5,\\
retrieval_turn_keyword_weight:0.5
    .venv/bin/python -m bench.locomo --data ... --via library --set retrieval_top_k=10

By default a fresh database on an embedded PostgreSQL in a temporary directory, destroyed
afterwards; ``--pgdata DIR`` keeps an embedded server's data directory and the seeded turns
between runs (a later run with the same DIR and instance writes only missing turns), so
search-time variants can be tried without re-embedding 5,882 turns.
REALTALK's real chats (``fetch github:danny911kr/REALTALK``, a directory of its
``data/Chat_*.json``; bench/locomo_data.py) are read and asked alike: the held-out check.
Writes bench/results/locomo-<provider>-<via>.json (realtalk-... for REALTALK; ``--output-dir``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from bench.common import (
    PROJECT_ROOT,
    RESULTS_DIR,
    fresh_database,
    machine_info,
    variant_argument,
    write_result,
)
from bench.locomo_data import TURN_SPACING, load
from bench.locomo_metrics import (
    Ranked,
    bm25_results,
    cross_validated,
    fold_of,
    markdown_table,
    ranked,
    summary,
)
from memory_platform.features.benchmarks.conversations import evaluate
from memory_platform.features.benchmarks.conversations.corpus import Conversation, Turn
from memory_platform.features.benchmarks.conversations.variants import (
    Variant,
    checked_value,
)
from memory_platform.features.context import context_search
from memory_platform.features.memories.bulk.importing import import_memories
from memory_platform.features.memories.bulk.reader import context_from_row
from memory_platform.features.retrieval import lexicon
from memory_platform.features.retrieval.question import QueryVector, embed_question
from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.sessions.items import TurnItem, append_items
from memory_platform.foundation.db import embedded, migrations
from memory_platform.foundation.db.connection import with_database
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.factory import get_provider

PROGRAM = "python -m bench.locomo"
ASK_LIMIT = 10
ASK_PROGRESS_EVERY = 250
PERSISTENT_DATABASE = "bench_locomo"
RETRY_STATUSES = (429, 503)
RETRIES = 5


# --- database -------------------------------------------------------------------------------


@contextmanager
def persistent_database(pgdata: Path) -> Iterator[str]:
    """The database :data:`PERSISTENT_DATABASE` on the embedded server of ``pgdata`` (started
    or attached; created and migrated when missing). Kept: the server stops when its last
    user leaves, the data directory stays."""
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    info = embedded.ensure_server(pgdata)
    try:
        admin = info.uri("postgres")
        with psycopg.connect(admin, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                  (PERSISTENT_DATABASE,)).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(
                    sql.Identifier(PERSISTENT_DATABASE)))
        url = with_database(admin, PERSISTENT_DATABASE)
        with psycopg.connect(url, autocommit=True) as conn:
            migrations.migrate(conn, PROJECT_ROOT / "migrations")
        yield url
    finally:
        embedded.release_server(pgdata)


@contextmanager
def reused_database(url: str) -> Iterator[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        migrations.migrate(conn, PROJECT_ROOT / "migrations")
    yield url


# --- the sessions path: turns appended as session items, asked through context search ----------


@dataclass
class SessionsCaller:
    """Each turn appended to its session as the conversation's user (``append_items``, what
    ``POST /api/v1/sessions/{key}/items`` does), each question asked through
    ``context_search`` (its history arm over the lossless session items): how a turn ranks
    that reaches the platform through the sessions API rather than as a memory (issue 29.3).
    The returned ids are the session items' (found by their words, or as the turns they are
    recalled as: sessions/turn_recall.py); a hit of another kind (a memory, an assertion)
    counts as no turn."""

    conn: psycopg.Connection
    settings: Settings
    instance_key: str
    provider: Any

    def write(self, user: str, session: str, turn: Turn) -> str:
        ctx = AccessContext(self.instance_key, user_id=user, session_key=session)
        done = append_items(self.conn, self.settings, ctx, [TurnItem(
            role="user", content=turn.content(), occurred_at=turn.occurred_at,
            client_item_id=turn.id)])       # a reused database: the item it already holds
        return str(done.items[0].id)

    def ask(self, user: str, question: str, settings: Settings) -> list[str]:
        items = context_search(self.conn, settings, AccessContext(self.instance_key,
                                                                  user_id=user),
                               question, limit=ASK_LIMIT, embedder=self.provider)
        return [item.id.split(":", 1)[1] for item in items if item.id.startswith("message:")]


# --- the API as each conversation's user ------------------------------------------------------


@dataclass
class ApiCaller:
    """``POST`` / ``GET /api/v1/memory`` as the conversation's user; a 429 or 503 (the API
    shedding load on a busy machine) is retried after a pause, anything else fails the run."""

    access: evaluate.ApiAccess
    pause: Callable[[float], None] = time.sleep

    def _send(self, method: str, user: str, what: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.access.token_for(user)}"}
        for attempt in range(RETRIES + 1):
            response = self.access.client.request(method, "/api/v1/memory", headers=headers,
                                                  **kwargs)
            if response.status_code not in RETRY_STATUSES or attempt == RETRIES:
                break
            self.pause(0.5 * 2 ** attempt)
        if response.status_code not in (200, 201):
            raise RuntimeError(f"{what}: {response.status_code} {response.text[:500]}")
        return response

    def write(self, user: str, session: str, turn: Turn) -> str:
        return self._send("POST", user, f"writing turn {turn.id}", json={
            "content": turn.content(), "visibility": "private",
            "occurredAt": turn.occurred_at.isoformat(),  # UTC: LoCoMo names no zone
            "context": {"sessionKey": session}}).json()["id"]

    def ask(self, user: str, question: str, settings: Settings) -> list[str]:
        response = self._send("GET", user, f"asking {question!r}",
                              params={"query": question, "limit": ASK_LIMIT})
        return [item["id"] for item in response.json()["results"]]


@dataclass
class LibraryCaller(evaluate.LibraryCaller):
    """``store_memory`` / ``search_memories`` in this process; each question is embedded once
    and its vector reused by every variant (the vector does not depend on the settings)."""

    vectors: dict[str, QueryVector] = field(default_factory=dict)

    def ask(self, user: str, question: str, settings: Settings) -> list[str]:
        vector = self.vectors.get(question)
        if vector is None:
            vector = self.vectors[question] = embed_question(self.provider, question)
        hits = search_memories(self.conn, settings, AccessContext(self.instance_key,
                                                                  user_id=user),
                               question, limit=ASK_LIMIT, question=vector, stamp=False)
        return [str(h.memory_id) for h in hits]


# --- the import path: a conversation as JSONL rows, asked like a library corpus -------------------


@dataclass
class ImportCaller(LibraryCaller):
    """Every turn a row of one bulk import (``import_memories``, what ``memory import`` does
    with a JSONL file): a ``fact`` of the conversation's user with its session key and event
    time (UTC), which the import links into conversation turns (memories/bulk/turns.py). The
    questions are asked like the library path's (issue 29.3: "every way in ranks the same")."""

    def seed(self, corpus: Sequence[Conversation], echo: Callable[[str], None]
             ) -> dict[str, list[str]]:
        # The conversation's own words, vouched for by whoever imports them (human_direct):
        # an imported fact of the default trust class waits for review, unrecalled.
        rows = [{"content": turn.content(), "visibility": "private", "source_type": "fact",
                 "trust_class": "human_direct",
                 "user_id": evaluate.user_of(conversation),
                 "session_key": evaluate.session_key(conversation, turn.session),
                 "occurred_at": turn.occurred_at.isoformat()}
                for conversation in corpus for turn in conversation.turns()]

        def progress(stats: Any) -> None:
            echo(f"  {stats.accepted + stats.deduplicated}/{len(rows)} rows imported")

        stats = import_memories(self.conn, self.settings, context_from_row(self.instance_key),
                                rows, embedder=self.provider, progress=progress,
                                expected_rows=len(rows))
        echo(f"  imported {stats.accepted} rows ({stats.deduplicated} repeats),"
             f" {stats.turns_linked} turns linked")
        return evaluate.seeded_turns(self.conn, self.instance_key, corpus)


# --- a run ----------------------------------------------------------------------------------


def select(conversations: Sequence[Conversation], spec: str | None
           ) -> list[tuple[int, Conversation]]:
    """The conversations ``spec`` names (positions "0,5", ranges "0-4", or sample ids
    "conv-26"), with their position in the data; all without ``spec``."""
    indexed = list(enumerate(conversations))
    if not spec:
        return indexed
    by_key = {c.key: i for i, c in indexed}
    chosen: list[int] = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        if part in by_key:
            positions = [by_key[part]]
        elif "-" in part and all(x.isdigit() for x in part.split("-", 1)):
            low, high = (int(x) for x in part.split("-", 1))
            positions = list(range(low, high + 1))
        elif part.isdigit():
            positions = [int(part)]
        else:
            raise ValueError(f"--conversations: {part!r} is no position, range or sample id "
                             f"(sample ids: {', '.join(by_key)})")
        for position in positions:
            if not 0 <= position < len(conversations):
                raise ValueError(f"--conversations: no conversation {position} "
                                 f"(the data has {len(conversations)})")
            if position not in chosen:
                chosen.append(position)
    return [indexed[p] for p in sorted(chosen)]


def ask_all(caller: Any, settings: Settings, corpus: Sequence[Conversation],
            folds: dict[str, str], turns_of: dict[str, list[str]], variant: Variant,
            echo: Callable[[str], None]) -> tuple[list[Ranked], float]:
    """Every question as its conversation's user under ``variant``; seconds per question."""
    tuned = variant.apply(settings)
    questions = [(c, q) for c in corpus for q in c.questions]
    results: list[Ranked] = []
    started = time.perf_counter()
    for done, (conversation, question) in enumerate(questions, 1):
        answered = caller.ask(evaluate.user_of(conversation), question.text, tuned)
        results.append(ranked(question.id, conversation.key, question.category,
                              folds[conversation.key], question.evidence,
                              [turns_of.get(memory_id, []) for memory_id in answered]))
        if done % ASK_PROGRESS_EVERY == 0 or done == len(questions):
            echo(f"  {variant.name}: {done}/{len(questions)} questions asked")
    return results, (time.perf_counter() - started) / max(1, len(questions))


def off_topic_partner(corpus: Sequence[Conversation], position: int) -> Conversation | None:
    """The next conversation (cyclically) whose speakers are none of this one's: its user's
    memories hold nothing the question asks about. REALTALK's chats share people (Elise talks
    in chats 1 and 2), so the next chat alone would ask some questions of their own subject;
    LoCoMo's neighbours share no speaker."""
    names = {name.casefold() for name in corpus[position].speakers}
    for step in range(1, len(corpus)):
        other = corpus[(position + step) % len(corpus)]
        if not names & {name.casefold() for name in other.speakers}:
            return other
    return None


def ask_off_topic(caller: Any, settings: Settings, corpus: Sequence[Conversation],
                  folds: dict[str, str], variant: Variant,
                  echo: Callable[[str], None]) -> dict[str, Any]:
    """Every question as the user of its :func:`off_topic_partner` under ``variant``: the
    share of them that answers anything (overall and per fold of the question's
    conversation)."""
    tuned = variant.apply(settings)
    answered: dict[str, list[bool]] = {"all": []}
    for position, conversation in enumerate(corpus):
        other = off_topic_partner(corpus, position)
        if other is None:
            continue
        for question in conversation.questions:
            hit = bool(caller.ask(evaluate.user_of(other), question.text, tuned))
            answered["all"].append(hit)
            answered.setdefault(f"fold {folds[conversation.key]}", []).append(hit)
    echo(f"  {variant.name}: {len(answered['all'])} off-topic questions asked")
    return {name: {"questions": len(hits), "answered": round(sum(hits) / max(1, len(hits)), 4)}
            for name, hits in answered.items()}


def _set(text: str) -> tuple[str, Any]:
    key, equals, raw = text.partition("=")
    if not equals:
        raise argparse.ArgumentTypeError(f"{text!r}: write name=value")
    try:
        value = json.loads(raw.strip())  # numbers, booleans, lists ([0.78, 0.85])
    except json.JSONDecodeError:
        value = raw.strip()
    try:
        return key.strip(), checked_value(key.strip(), value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROGRAM, description=__doc__.split("\n\n")[0],
        epilog="LoCoMo's session times carry no time zone: they are sent as UTC (occurredAt "
        f"with +00:00), each turn {int(TURN_SPACING.total_seconds())} s after the one before. "
        "See docs/benchmarks.md, 'LoCoMo'.")
    parser.add_argument("--data", type=Path, required=True,
                        help="locomo10.zip, a locomo10.json or a directory of its JSON files "
                        "(or a directory of REALTALK's Chat_*.json)")
    parser.add_argument("--via", choices=("api", "library", "sessions", "import"),
                        default="api",
                        help="api: POST/GET /api/v1/memory through a server on loopback; "
                        "library: store_memory / search_memories here; sessions: session "
                        "items asked through context search; import: one bulk import of "
                        "every turn (JSONL rows), asked like library")
    parser.add_argument("--provider", choices=("local", "hash"), default="local",
                        help="embedding provider (local: the default e5-small of the 'local' "
                        "extra, nothing downloaded; hash: offline feature hashing, for tests)")
    parser.add_argument("--conversations", default=None, metavar="SPEC",
                        help="a subset: positions (0,5), ranges (0-4) or sample ids (conv-26)")
    parser.add_argument("--folds", action="store_true",
                        help="report the 2-fold split (conversations 0-4 / 5-9 of the data): "
                        "the variant best on one half, measured on the other, both ways")
    parser.add_argument("--select-by", default="R@10",
                        choices=("R@1", "R@3", "R@6", "R@10", "MRR@10", "sR@10"),
                        help="the metric --folds chooses a variant by")
    parser.add_argument("--set", dest="sets", action="append", default=[], type=_set,
                        metavar="NAME=VALUE",
                        help="a setting for the whole run, seeding included (repeatable; "
                        "through the API it is passed to the server as MEMORY_<NAME>)")
    parser.add_argument("--variant", action="append", default=[], type=variant_argument,
                        metavar="NAME=KEY:VALUE,...",
                        help="library: a search-time settings variant the seeded corpus is "
                        "asked under (repeatable; default: the settings as they are)")
    parser.add_argument("--off-topic", action="store_true",
                        help="also ask every question as the next conversation's user that "
                        "shares no speaker with it (whose memories are another "
                        "conversation) and report the share that "
                        "answers anything: scores above minScore (docs/retrieval-scores.md)")
    parser.add_argument("--no-captions", action="store_true",
                        help="leave out the captions of shared photos (default: appended to "
                        "the turn in brackets)")
    parser.add_argument("--no-analyze", action="store_true",
                        help="skip ANALYZE of the chunks after seeding (the rarity weights "
                        "come from the planner statistics)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--database-url", default=None,
                        help="server to create a fresh database on (default: embedded)")
    source.add_argument("--reuse", default=None, metavar="URL",
                        help="run in this database, reusing the turns seeded there")
    source.add_argument("--pgdata", type=Path, default=None, metavar="DIR",
                        help="an embedded server's data directory kept between runs; the "
                        "seeded turns are kept and reused")
    parser.add_argument("--keep", action="store_true", help="keep the seeded memories")
    parser.add_argument("--instance", default=None,
                        help="instance key (default bench-locomo-<provider>); use one per "
                        "write-time setting when reusing a database")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    return parser


def _database(args: argparse.Namespace) -> contextlib.AbstractContextManager[str]:
    if args.reuse:
        return reused_database(args.reuse)
    if args.pgdata:
        return persistent_database(args.pgdata.resolve())
    return fresh_database(args.database_url, keep=args.keep)


@contextmanager
def _server_settings(overrides: dict[str, Any]) -> Iterator[None]:
    """``--set`` values in this process's environment while the API subprocess starts."""
    names = {f"MEMORY_{key.upper()}": str(value).lower() if isinstance(value, bool)
             else json.dumps(list(value)) if isinstance(value, (list, tuple))
             else str(value) for key, value in overrides.items()}
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(names)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _row(label: str, body: dict[str, Any]) -> str:
    row = body["by_category"]["all"]
    return (f"{label}: R@1 {row['R@1']:.3f}  R@3 {row['R@3']:.3f}  R@6 {row['R@6']:.3f}  "
            f"R@10 {row['R@10']:.3f}  MRR@10 {row['MRR@10']:.3f}  session R@10 "
            f"{row['sR@10']:.3f}")


def main(argv: list[str] | None = None, echo: Callable[[str], None] = print) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.variant and args.via == "api":
        parser.error("--variant needs --via library: the API ranks with its server's settings "
                     "(use --set to start the server with other settings)")
    started = time.perf_counter()
    try:
        loaded = load(args.data, captions=not args.no_captions)
        chosen = select(loaded.conversations, args.conversations)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    total = len(loaded.conversations)
    corpus = [c for _, c in chosen]
    folds = {c.key: fold_of(position, total) for position, c in chosen}
    overrides = dict(args.sets)
    variants = args.variant or [Variant("server" if args.via == "api" else "default")]
    turns = sum(len(c.turns()) for c in corpus)
    questions = sum(len(c.questions) for c in corpus)
    keys = ", ".join(c.key for c in corpus)
    echo(f"{loaded.dataset}: {len(corpus)} of {total} conversations ({keys}), "
         f"{turns} turns, {questions} questions (dropped while reading: "
         f"{loaded.dropped_questions} questions without evidence, {loaded.dropped_evidence} "
         f"evidence ids naming no turn)")
    reuse = bool(args.reuse or args.pgdata)
    keep = args.keep or bool(args.pgdata)
    with _database(args) as url, psycopg.connect(url, autocommit=True) as conn, \
            contextlib.ExitStack() as stack:
        register_vector(conn)
        settings = Settings(database_url=url, embedding_provider=args.provider,
                            _env_file=None, **overrides)  # type: ignore[call-arg]
        provider = get_provider(settings)
        instance_key = args.instance or f"bench-locomo-{provider.provider}"
        echo(f"instance {instance_key!r}, {provider.provider}:{provider.model} via {args.via}"
             + (f", settings {overrides}" if overrides else ""))
        if args.via == "api":
            from memory_platform.cli.bench import api_access
            with _server_settings(overrides):
                access = stack.enter_context(api_access(conn, settings, args.provider,
                                                        instance_key))
            caller: Any = ApiCaller(access)
        elif args.via == "sessions":
            caller = SessionsCaller(conn, settings, instance_key, provider)
        elif args.via == "import":
            caller = ImportCaller(conn, settings, instance_key, provider)
        else:
            caller = LibraryCaller(conn, settings, instance_key, provider)
        try:
            stored: dict[str, list[str]] = {}
            if reuse:
                stored = evaluate.seeded_turns(conn, instance_key, corpus)
                echo(f"reusing {sum(len(t) for t in stored.values())} stored turns")
            else:
                evaluate.cleanup(conn, instance_key)
            present = sum(len(t) for t in stored.values())
            seeding = time.perf_counter()
            if isinstance(caller, ImportCaller) and not present:
                turns_of = caller.seed(corpus, echo)
            else:
                turns_of = evaluate.seed(caller, corpus, stored, echo)
            seed_seconds = time.perf_counter() - seeding
            echo(f"seeded {turns - present} turns in {seed_seconds:.1f} s "
                 f"({len(turns_of)} memories)")
            if not args.no_analyze:
                conn.execute("ANALYZE agent_memory_chunks")
                lexicon.forget()
            per_variant: dict[str, list[Ranked]] = {}
            timings: dict[str, float] = {}
            off_topic: dict[str, dict[str, Any]] = {}
            for variant in variants:
                per_variant[variant.name], timings[variant.name] = ask_all(
                    caller, settings, corpus, folds, turns_of, variant, echo)
                if args.off_topic and len(corpus) > 1:
                    off_topic[variant.name] = ask_off_topic(caller, settings, corpus, folds,
                                                            variant, echo)
        finally:
            if not keep:
                echo(f"deleted {evaluate.cleanup(conn, instance_key)} benchmark memories")
        machine = machine_info(conn)
    bm25 = bm25_results(corpus, folds, ASK_LIMIT)
    summaries = []
    for variant in variants:
        body = summary(per_variant[variant.name])
        summaries.append({"variant": variant.name, "overrides": variant.overrides, **body,
                          "ms_per_query": round(timings[variant.name] * 1000, 2),
                          **({"off_topic": off_topic[variant.name]}
                             if variant.name in off_topic else {})})
        extra = f" {variant.overrides}" if variant.overrides else ""
        echo(f"\n{variant.name}{extra} ({timings[variant.name] * 1000:.1f} ms/question)\n"
             f"{markdown_table(per_variant[variant.name])}")
    bm25_body = summary(bm25)
    echo(f"\nBM25 over the same turns\n{markdown_table(bm25)}\n")
    for entry in summaries:
        echo(_row(entry["variant"], entry))
        if "off_topic" in entry:
            shares = ", ".join(f"{name} {body['answered']:.3f}"
                               for name, body in entry["off_topic"].items())
            echo(f"  off topic, share answering anything: {shares}")
    echo(_row("BM25", bm25_body))
    folded = cross_validated(per_variant, args.select_by) if args.folds else None
    if folded:
        for name, choice in folded.items():
            held = next(k for k in choice if k.startswith("held_out_"))
            numbers = choice[held]
            tuned = choice[name.replace("chosen_", "")]
            if numbers:
                echo(f"{name}: {choice['variant']} ({args.select_by} {tuned:.3f}); "
                     f"{held.replace('_', ' ')}: R@10 {numbers['R@10']:.3f} MRR@10 "
                     f"{numbers['MRR@10']:.3f} session R@10 {numbers['sR@10']:.3f}")
    payload = {
        "command": " ".join([PROGRAM, *(argv if argv is not None else sys.argv[1:])]),
        "via": args.via, "provider": provider.provider, "model": provider.model,
        "instance": instance_key, "settings": overrides, "captions": not args.no_captions,
        "dataset": loaded.dataset,
        "time_zone": f"UTC ({loaded.dataset}'s times carry none)",
        "corpus": {"conversations": [c.key for c in corpus], "folds": folds, "turns": turns,
                   "questions": questions, "memories": len(turns_of),
                   "dropped_questions": loaded.dropped_questions,
                   "dropped_evidence": loaded.dropped_evidence},
        "ask_limit": ASK_LIMIT, "written_turns": turns - present,
        "seed_seconds": round(seed_seconds, 1), "summaries": summaries,
        "bm25": bm25_body, "cross_validation": folded,
        "questions": {name: [r.as_json() for r in results]
                      for name, results in {**per_variant, "bm25": bm25}.items()},
        "total_seconds": round(time.perf_counter() - started, 1), "machine": machine}
    target = write_result(f"{loaded.dataset.lower()}-{provider.provider}-{args.via}", payload,
                          args.output_dir)
    echo(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
