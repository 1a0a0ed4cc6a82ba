"""`memory-platform bench`: benchmarks that print numbers and write JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memory_platform.cli.common import PlatformGroup, platform_connection
from memory_platform.foundation.settings import Settings, get_settings

if TYPE_CHECKING:
    import psycopg

    from memory_platform.features.benchmarks.conversations.evaluate import ApiAccess, RunResult
    from memory_platform.features.benchmarks.conversations.variants import Variant
    from memory_platform.shared.embeddings.base import EmbeddingProvider


@click.group(cls=PlatformGroup)
def bench() -> None:
    """Benchmarks that print numbers and write JSON (bench/results/)."""


@bench.command("retrieval")
@click.option("--provider", "providers", multiple=True,
              type=click.Choice(["hash", "local", "openai", "available"]), default=["available"],
              show_default=True, help="Embedding provider(s); 'available' = every usable one.")
@click.option("--instance", default=None,
              help="Run among this instance's real memories (default: a bench instance).")
@click.option("--keep", is_flag=True, help="Keep the benchmark memories afterwards.")
@click.option("--output-dir", type=click.Path(path_type=Path), default=Path("bench/results"),
              show_default=True)
@click.option("--suite", type=click.Choice(["fixtures", "conversations"]), default="fixtures",
              show_default=True, help="The labelled fixtures, or the generated two-person "
              "conversations (recall and MRR per question category).")
@click.option("--via", type=click.Choice(["library", "api"]), default="library",
              show_default=True, help="conversations: write and ask in this process, or "
              "through the HTTP API started on loopback.")
@click.option("--conversations", "conversation_count", type=click.IntRange(min=1), default=8,
              show_default=True, help="conversations: how many to generate.")
@click.option("--variant", "variant_texts", multiple=True, metavar="NAME=KEY:VALUE,...",
              help="conversations (library): ask under these settings variants instead of "
              "default, keyword-only and vector-only; repeatable, values are JSON scalars.")
@click.option("--reuse-instance", is_flag=True,
              help="conversations: use the turns a --keep run left, write only missing ones.")
def bench_retrieval(providers: tuple[str, ...], instance: str | None, keep: bool,
                    output_dir: Path, suite: str, via: str, conversation_count: int,
                    variant_texts: tuple[str, ...], reuse_instance: bool) -> None:
    """Seed the labelled German/English fixtures, ask one paraphrased question each, print
    per-query ranks, Precision@1, Recall@3, Recall@6 and MRR (and the weights' effect).

    With --suite conversations: seed generated conversations turn by turn as their user's
    memories, ask the labelled questions, print R@1, R@6, R@10 and MRR@10 per category and
    variant, and write bench/results/conversations-<provider>-<via>.json."""
    from memory_platform.features.benchmarks import retrieval
    from memory_platform.shared.embeddings.base import EmbeddingError
    from memory_platform.shared.embeddings.factory import get_provider

    settings = get_settings()
    if suite == "fixtures" and (via != "library" or variant_texts or reuse_instance):
        raise click.UsageError("--via, --variant and --reuse-instance belong to "
                               "--suite conversations")
    variants = _variants(variant_texts, via)
    kinds = ["hash", "local", "openai"] if "available" in providers else list(providers)
    output_dir.mkdir(parents=True, exist_ok=True)
    with platform_connection(settings) as conn:
        for kind in kinds:
            try:
                provider = get_provider(settings.model_copy(update={"embedding_provider": kind}))
                if kind == "openai" and settings.openai_api_key is None:
                    raise EmbeddingError("no MEMORY_OPENAI_API_KEY configured")
            except EmbeddingError as exc:
                if "available" not in providers:
                    raise
                click.echo(f"skipping {kind}: {exc}", err=True)
                continue
            if suite == "conversations":
                target = output_dir / f"conversations-{kind}-{via}.json"
                result = _conversations(conn, settings, provider, kind, via=via,
                                        count=conversation_count, variants=variants,
                                        instance=instance, keep=keep, reuse=reuse_instance)
                target.write_text(json.dumps(result.as_json(), indent=2, ensure_ascii=False))
                click.echo(f"wrote {target}")
                continue
            reports = retrieval.run(conn, settings, provider, instance_key=instance, keep=keep,
                                    echo=click.echo)
            target = output_dir / f"retrieval-{kind}.json"
            target.write_text(json.dumps({
                "summaries": [r.summary() for r in reports],
                "queries": [r.__dict__ for r in reports[0].results],
            }, indent=2))
            click.echo(f"wrote {target}")


def _variants(texts: tuple[str, ...], via: str) -> list[Variant] | None:
    """The parsed --variant options (None: the suite's defaults)."""
    from memory_platform.features.benchmarks.conversations.variants import parse_variant

    if texts and via == "api":
        raise click.UsageError("--variant needs --via library: the API ranks with its "
                               "server's settings")
    try:
        return [parse_variant(text) for text in texts] or None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--variant") from exc


@contextmanager
def user_keys(conn: psycopg.Connection, instance_key: str) -> Iterator[Callable[[str], str]]:
    """``token_for(user)``: the token of a user key (memory:read, memory:write) made for
    the user on first use; every key is deleted on exit, so no credential outlives the run
    (kept memories do)."""
    from memory_platform.features.apikeys import create_key

    tokens: dict[str, str] = {}
    key_ids: list[str] = []

    def token_for(user: str) -> str:
        if user not in tokens:
            with conn.transaction():  # committed before the API reads it
                key, tokens[user] = create_key(conn, instance_key=instance_key, user_id=user,
                                               scopes=("memory:read", "memory:write"),
                                               name="bench/conversations")
            key_ids.append(str(key.id))
        return tokens[user]

    try:
        yield token_for
    finally:
        with conn.transaction():
            conn.execute("DELETE FROM api_keys WHERE id = ANY(%s::uuid[])", (key_ids,))


@contextmanager
def api_access(conn: psycopg.Connection, settings: Settings, kind: str,
               instance_key: str) -> Iterator[ApiAccess]:
    """The API started on loopback with the ``kind`` embedding (its log in a temporary
    directory, named on failure) and user keys of ``instance_key``, for one run."""
    import tempfile

    from memory_platform.features.benchmarks.conversations.evaluate import ApiAccess
    from memory_platform.features.benchmarks.conversations.loopback import loopback_api

    log_path = Path(tempfile.mkdtemp(prefix="bench-conversations-")) / "api.log"
    with loopback_api(settings, kind, log_path) as client, \
            user_keys(conn, instance_key) as token_for:
        yield ApiAccess(client, token_for)


def _conversations(conn: psycopg.Connection, settings: Settings, provider: EmbeddingProvider,
                   kind: str, *, via: str, count: int, variants: list[Variant] | None,
                   instance: str | None, keep: bool, reuse: bool) -> RunResult:
    """One conversation-suite run; through the API, a server started on loopback for it."""
    from memory_platform.features.benchmarks.conversations import evaluate

    corpus = evaluate.default_corpus(count)
    instance_key = evaluate.instance_for(provider, instance)
    with ExitStack() as stack:
        api = (stack.enter_context(api_access(conn, settings, kind, instance_key))
               if via == "api" else None)
        return evaluate.run(conn, settings, provider, corpus, via=via, api=api,
                            variants=variants, instance_key=instance_key, keep=keep,
                            reuse=reuse, echo=click.echo)


COMMANDS = (bench,)  # collected by memory_platform.cli
