"""`memory-platform bench`: benchmarks that print numbers and write JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click

from memory_platform.cli.common import platform_connection
from memory_platform.settings import get_settings


@click.group()
def bench() -> None:
    """Benchmarks that print numbers and write JSON (bench/results/)."""


@bench.command("retrieval")
@click.option("--provider", "providers", multiple=True,
              type=click.Choice(["hash", "local", "openai", "available"]), default=["available"],
              show_default=True, help="Embedding provider(s); 'available' = every usable one.")
@click.option("--instance", default=None,
              help="Run among this instance's real memories (default: a bench instance).")
@click.option("--keep", is_flag=True, help="Keep the fixture memories afterwards.")
@click.option("--output-dir", type=click.Path(path_type=Path), default=Path("bench/results"),
              show_default=True)
def bench_retrieval(providers: tuple[str, ...], instance: str | None, keep: bool,
                    output_dir: Path) -> None:
    """Seed the labelled German/English fixtures, ask one paraphrased question each, print
    per-query ranks, Precision@1, Recall@3, Recall@6 and MRR (and the weights' effect)."""
    from memory_platform.benchmarks import retrieval
    from memory_platform.embeddings.base import EmbeddingError
    from memory_platform.embeddings.factory import get_provider

    settings = get_settings()
    kinds = ["hash", "local", "openai"] if "available" in providers else list(providers)
    output_dir.mkdir(parents=True, exist_ok=True)
    with platform_connection(settings) as conn:
        for kind in kinds:
            try:
                provider = get_provider(settings.model_copy(update={"embedding_provider": kind}))
                if kind == "openai" and settings.openai_api_key is None:
                    raise EmbeddingError("no MEMORY_OPENAI_API_KEY configured")
            except EmbeddingError as exc:
                if "available" in providers:
                    click.echo(f"skipping {kind}: {exc}", err=True)
                    continue
                raise click.ClickException(str(exc)) from exc
            reports = retrieval.run(conn, settings, provider, instance_key=instance, keep=keep,
                                    echo=click.echo)
            target = output_dir / f"retrieval-{kind}.json"
            target.write_text(json.dumps({
                "summaries": [r.summary() for r in reports],
                "queries": [r.__dict__ for r in reports[0].results],
            }, indent=2))
            click.echo(f"wrote {target}")
