"""``memory-platform``: the command line of the platform.

Every command reads the same settings (``MEMORY_*`` environment, ``.env``); run any of them
with ``--help``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from memory_platform.settings import get_settings


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="memory-platform")
def main() -> None:
    """Durable, auditable memory for LLM agents: PostgreSQL + pgvector ledger, Dagster
    maintenance, Starlette API."""


# --- config ---------------------------------------------------------------------------------
@main.group()
def config() -> None:
    """Inspect the effective configuration."""


@config.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def config_show(as_json: bool) -> None:
    """Print the effective settings (environment + .env + defaults), secrets redacted."""
    values = get_settings().redacted()
    if as_json:
        click.echo(json.dumps(values, indent=2, default=str))
        return
    width = max(len(name) for name in values)
    for name, value in values.items():
        click.echo(f"MEMORY_{name.upper():<{width}}  {value}")


# --- db -------------------------------------------------------------------------------------
@main.group()
def db() -> None:
    """Database: migrations, status, shell."""


def _migrations_connection():
    from memory_platform.db.connection import connect

    return connect(autocommit=True)


def platform_connection(settings=None):
    """An autocommit connection to a database whose schema is exactly the code's; a clear
    error (run `db migrate`, or restore an edited migration) otherwise."""
    from memory_platform.db import migrations
    from memory_platform.db.connection import connect

    settings = settings or get_settings()
    conn = connect(settings, autocommit=True)
    try:
        migrations.ensure_current(conn, settings.migrations_dir)
    except migrations.MigrationError as exc:
        conn.close()
        raise click.ClickException(str(exc)) from exc
    return conn


@db.command("migrate")
def db_migrate() -> None:
    """Apply pending migrations (safe to run concurrently; refuses edited migrations)."""
    from memory_platform.db import migrations

    settings = get_settings()
    with _migrations_connection() as conn:
        try:
            applied = migrations.migrate(
                conn,
                settings.migrations_dir,
                progress=lambda m: click.echo(f"applying {m.version:04d}_{m.name} ..."),
            )
        except migrations.MigrationError as exc:
            raise click.ClickException(str(exc)) from exc
    click.echo(f"{len(applied)} migration(s) applied; schema is current.")


@db.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def db_status(as_json: bool) -> None:
    """List every migration with its state, and the pgvector version."""
    from memory_platform.db import migrations

    settings = get_settings()
    with _migrations_connection() as conn:
        states = migrations.status(conn, settings.migrations_dir)
        row = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
        server = conn.execute("SHOW server_version").fetchone()[0]
    vector = row[0] if row else None
    if as_json:
        click.echo(json.dumps({
            "server_version": server,
            "vector": vector,
            "migrations": [
                {"version": s.version, "name": s.name, "state": s.state,
                 "applied_at": s.applied_at.isoformat() if s.applied_at else None}
                for s in states
            ],
        }, indent=2))
        return
    click.echo(f"PostgreSQL {server}; pgvector {vector or 'not installed (run db migrate)'}")
    for s in states:
        when = s.applied_at.strftime("%Y-%m-%d %H:%M:%S") if s.applied_at else ""
        click.echo(f"  {s.version:04d}  {s.name:<32} {s.state:<12} {when}")
    if any(s.state != "applied" for s in states):
        click.echo("Run `memory-platform db migrate` to apply pending migrations.")


@db.command("url")
def db_url() -> None:
    """Print the database URL (password redacted), e.g. for psql."""
    from memory_platform.db.connection import database_url
    from memory_platform.settings import redact_url

    click.echo(redact_url(database_url()))


@db.command("psql", context_settings={"ignore_unknown_options": True})
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
def db_psql(psql_args: tuple[str, ...]) -> None:
    """Open psql on the platform database (the embedded server's own psql when embedded).

    Extra arguments go to psql, e.g. `memory-platform db psql -c '\\dx'`."""
    import os
    import shutil
    import subprocess

    from memory_platform.db import embedded
    from memory_platform.db.connection import database_url

    settings = get_settings()
    url = database_url(settings)
    psql = (
        str(embedded._wheel_bin_dir() / "psql")
        if settings.database_url is None
        else shutil.which("psql")
    )
    if not psql:
        raise click.ClickException("psql not found on PATH; install the PostgreSQL client")
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    sys.exit(subprocess.call([psql, url, *psql_args], env=env))


# --- services -------------------------------------------------------------------------------
@main.command("api")
@click.option("--host", default=None, help="Bind address (default MEMORY_API_HOST).")
@click.option("--port", type=int, default=None, help="Port (default MEMORY_API_PORT).")
@click.option("--workers", type=int, default=1, show_default=True, help="Worker processes.")
def api_command(host: str | None, port: int | None, workers: int) -> None:
    """Run the HTTP API alone (uvicorn)."""
    import uvicorn

    settings = get_settings()
    uvicorn.run(
        "api.app:create_app",
        factory=True,
        host=host or settings.api_host,
        port=port or settings.api_port,
        workers=workers,
        log_level="info",
        access_log=False,  # one log line per request costs CPU; /metrics counts requests
    )


@main.command("dev")
@click.option("--no-dagster", is_flag=True, help="Run the API only.")
def dev_command(no_dagster: bool) -> None:
    """Run everything locally: database, migrations, Dagster UI + daemon, API.

    Ctrl-C (or SIGTERM) stops all of it, the embedded database included."""
    from memory_platform.devserver import run_dev

    sys.exit(run_dev(get_settings(), with_dagster=not no_dagster))


# --- benchmarks -----------------------------------------------------------------------------
@main.group()
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


# --- API keys -------------------------------------------------------------------------------
@main.group()
def keys() -> None:
    """Developer API keys (bearer tokens bound to one user and instance)."""


@keys.command("create")
@click.option("--user", "user_id", required=True, help="The user the key acts as (always).")
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
@click.option("--scopes", required=True, help="Comma-separated: memory:read,memory:write,admin")
@click.option("--name", default="", help="A label to recognise the key by.")
@click.option("--json", "as_json", is_flag=True, help='Print {"id": ..., "token": ...}.')
def keys_create(user_id: str, instance: str | None, scopes: str, name: str,
                as_json: bool) -> None:
    """Create a key and print its token ONCE (only a hash is stored)."""
    from memory_platform import apikeys
    from memory_platform.errors import InvalidInput

    settings = get_settings()
    try:
        parsed = apikeys.parse_scopes(scopes)
        with platform_connection(settings) as conn:
            key, token = apikeys.create_key(conn, instance_key=instance or settings.instance_key,
                                            user_id=user_id, scopes=parsed, name=name)
    except InvalidInput as exc:
        raise click.ClickException(exc.message) from exc
    if as_json:
        click.echo(json.dumps({"id": str(key.id), "token": token}))
        return
    click.echo(f"key {key.id} for user {key.user_id!r} in instance {key.instance_key!r}, "
               f"scopes {','.join(key.scopes)}")
    click.echo(f"token (shown once, store it now): {token}")


@keys.command("list")
@click.option("--instance", default=None, help="Only this instance.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def keys_list(instance: str | None, as_json: bool) -> None:
    """List keys (never their tokens)."""
    from memory_platform import apikeys

    with platform_connection() as conn:
        found = apikeys.list_keys(conn, instance)
    rows = [{"id": str(k.id), "instance": k.instance_key, "user": k.user_id, "name": k.name,
             "scopes": list(k.scopes), "prefix": k.token_prefix,
             "created_at": k.created_at.isoformat(),
             "last_used_at": k.last_used_at.isoformat() if k.last_used_at else None,
             "revoked": k.revoked_at is not None} for k in found]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        state = "revoked" if r["revoked"] else "active"
        click.echo(f"{r['id']}  {r['prefix']}  {r['instance']}/{r['user']}  "
                   f"{','.join(r['scopes'])}  {state}  {r['name']}")
    if not rows:
        click.echo("no keys; create one with `memory-platform keys create --help`")


@keys.command("revoke")
@click.argument("key_id")
def keys_revoke(key_id: str) -> None:
    """Revoke a key; requests with its token get 401 within MEMORY_API_KEY_CACHE_SECONDS."""
    from memory_platform import apikeys
    from memory_platform.errors import NotFound

    try:
        with platform_connection() as conn:
            key = apikeys.revoke_key(conn, key_id)
    except NotFound as exc:
        raise click.ClickException(exc.message) from exc
    click.echo(f"revoked {key.id} ({key.token_prefix}, user {key.user_id!r})")


# --- MCP adapter ----------------------------------------------------------------------------
@main.command("mcp")
def mcp_command() -> None:
    """Run the stdio MCP server for coding agents (Codex, Claude Code) over the HTTP API.

    Environment: MEMORY_API_URL (default http://127.0.0.1:8080); MEMORY_READ_TOKEN (a
    memory:read key) lists memory_search and memory_get; the separate MEMORY_WRITE_TOKEN (a
    memory:write key) lists memory_store. stdout is the protocol; diagnostics go to stderr."""
    from api.mcp import run

    run()


# --- bulk import and re-embedding -----------------------------------------------------------
def _with_provider(settings, provider: str | None):
    return settings.model_copy(update={"embedding_provider": provider}) if provider else settings


def _count_rows(path: str) -> int | None:
    """Non-blank lines of the file (the import's size, for the index decision); None for
    stdin."""
    if path == "-":
        return None
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


class _ProgressLine:
    """A progress line on stderr: rewritten in place on a terminal, one line every few
    seconds otherwise (logs)."""

    def __init__(self, every: float = 5.0) -> None:
        import time

        self.tty = sys.stderr.isatty()
        self.every = 0.2 if self.tty else every
        self.started = time.perf_counter()
        self.last = 0.0

    def show(self, text: str, *, force: bool = False) -> None:
        import time

        now = time.perf_counter()
        if not force and now - self.last < self.every:
            return
        self.last = now
        if self.tty:
            click.echo(f"\r\033[K{text}", err=True, nl=False)
        else:
            click.echo(text, err=True)

    def done(self) -> None:
        if self.tty and self.last:
            click.echo("", err=True)

    def rate(self, count: int) -> float:
        import time

        elapsed = time.perf_counter() - self.started
        return count / elapsed if elapsed > 0 else 0.0


@main.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--instance", default=None,
              help="Instance of rows without their own instance_key (default MEMORY_INSTANCE_KEY).")
@click.option("--batch-size", type=click.IntRange(1, 5000), default=None,
              help="Rows per transaction (default MEMORY_IMPORT_BATCH_SIZE).")
@click.option("--provider", type=click.Choice(["hash", "openai", "local"]), default=None,
              help="Embedding provider (default MEMORY_EMBEDDING_PROVIDER).")
@click.option("--rebuild-index/--no-rebuild-index", default=None,
              help="Drop the generation's HNSW chunk index for the load and rebuild it after "
                   "(default: when the import is larger than MEMORY_IMPORT_REBUILD_INDEX_MIN_ROWS "
                   "and than the rows the index holds).")
def import_command(file: str, instance: str | None, batch_size: int | None,
                   provider: str | None, rebuild_index: bool | None) -> None:
    """Import memories from a JSON Lines FILE ('-' reads stdin), one object per line:

    \b
    {"content": "...", "visibility": "private|team|workspace|channel",
     "user_id", "session_key", "group_room_id", "channel_thread_key", "channel_type",
     "instance_key", "subject_refs": {}, "source_type": "fact|manual|flush|summary|prompt_file",
     "assertion_type", "trust_class", "title", "metadata": {}}

    Every row gets the rules of a single write (validation, credential rejection, visibility
    from its access fields, dedup, chunking, source envelope, fact assertions under the
    write-path policy). source_type defaults to "manual" and trust_class to "imported" (so
    imported facts wait for review unless marked "human_direct"). A bad row is reported with
    its line number and skipped; the rest continue. Exit status 1 when any row was
    rejected."""
    from memory_platform.embeddings.base import EmbeddingError
    from memory_platform.embeddings.factory import get_provider
    from memory_platform.memories.bulk import context_from_row, import_memories, read_jsonl

    settings = _with_provider(get_settings(), provider)
    try:
        embedder = get_provider(settings)
    except EmbeddingError as exc:
        raise click.ClickException(str(exc)) from exc
    expected = _count_rows(file)
    line = _ProgressLine()

    def progress(stats) -> None:
        line.show(f"{stats.rows:,}{f'/{expected:,}' if expected else ''} rows  "
                  f"{line.rate(stats.rows):,.0f} rows/s  accepted {stats.accepted:,}  "
                  f"deduplicated {stats.deduplicated:,}  rejected {len(stats.rejected):,}")

    with platform_connection(settings) as conn, click.open_file(file, "rb") as handle:
        stats = import_memories(
            conn, settings, context_from_row(instance or settings.instance_key),
            read_jsonl(handle), embedder=embedder, batch_size=batch_size, progress=progress,
            rebuild_index=rebuild_index, expected_rows=expected,
        )
    progress(stats)
    line.done()
    click.echo(f"imported {stats.rows:,} rows in {stats.seconds:.1f} s "
               f"({stats.rows_per_second:,.0f} rows/s): {stats.accepted:,} accepted, "
               f"{stats.deduplicated:,} deduplicated, {len(stats.rejected):,} rejected")
    click.echo(f"chunks {stats.chunks:,} ({stats.embedded:,} memories embedded with "
               f"{stats.generation_key}, {stats.keyword_only:,} keyword-only); assertions "
               f"{stats.assertions_created:,} created, {stats.assertions_activated:,} active")
    if stats.index_rebuilt:
        click.echo(f"load {stats.load_seconds:.1f} s, HNSW index rebuilt in "
                   f"{stats.index_seconds:.1f} s")
    elif stats.index_note:
        click.echo(f"index: {stats.index_note}")
    for error in stats.embedding_errors:
        click.echo(f"embedding failed (rows stored keyword-only; run `memory-platform "
                   f"embeddings reembed`): {error}", err=True)
    if stats.rejected:
        click.echo("rejected rows:")
        for rejection in stats.rejected[:20]:
            click.echo(f"  line {rejection.line}: {rejection.reason}")
        if len(stats.rejected) > 20:
            click.echo(f"  ... and {len(stats.rejected) - 20:,} more")
        sys.exit(1)


@main.group()
def embeddings() -> None:
    """Embedding generations and the re-embedding backlog."""


@embeddings.command("reembed")
@click.option("--limit", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Rows (assertions, then chunks) converted per run.")
@click.option("--all", "until_done", is_flag=True,
              help="Repeat runs of --limit rows until the backlog is empty.")
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
@click.option("--provider", type=click.Choice(["hash", "openai", "local"]), default=None,
              help="Target provider (default MEMORY_EMBEDDING_PROVIDER); it becomes the "
                   "instance's active generation.")
def embeddings_reembed(limit: int, until_done: bool, instance: str | None,
                       provider: str | None) -> None:
    """Give chunks without a vector (or with another generation's) and active assertions
    without one a vector of the configured provider's generation. Safe to run in several
    processes at once (rows are locked with SKIP LOCKED); exit status 1 on a provider error."""
    from memory_platform.embeddings.base import EmbeddingError
    from memory_platform.embeddings.factory import get_provider
    from memory_platform.projection.reembed import reembed_backfill

    settings = _with_provider(get_settings(), provider)
    try:
        embedder = get_provider(settings)
    except EmbeddingError as exc:
        raise click.ClickException(str(exc)) from exc
    line = _ProgressLine()
    chunks = assertions = 0

    def progress(result) -> None:
        done = chunks + assertions + result.converted
        line.show(f"converted {done:,} ({chunks + result.chunks_converted:,} chunks, "
                  f"{assertions + result.assertions_embedded:,} assertions)  "
                  f"{line.rate(done):,.1f} rows/s")

    with platform_connection(settings) as conn:
        while True:
            result = reembed_backfill(conn, settings, limit=limit, embedder=embedder,
                                      instance_key=instance, progress=progress)
            chunks += result.chunks_converted
            assertions += result.assertions_embedded
            if not until_done or result.error or not result.converted or not result.remaining:
                break
    line.done()
    click.echo(f"{result.instance_key}: {chunks:,} chunks and {assertions:,} assertions "
               f"embedded with {result.generation_key}; backlog ~{result.remaining_chunks:,} "
               f"chunks, ~{result.remaining_assertions:,} assertions")
    if result.error:
        click.echo(f"stopped: {result.error}", err=True)
        sys.exit(1)


# --- dream ----------------------------------------------------------------------------------
# Shared group: `dream run` (Dagster runs) is defined right below; `dream list`,
# `dream rollback` and `demo seed` are added by their own owners after it. Keep each
# command self-contained so parallel edits do not collide.
@main.group()
def dream() -> None:
    """Dreaming: run (through Dagster), list and roll back Dreams."""


@dream.command("run")
@click.option("--partition", "partitions", multiple=True, metavar="KEY",
              help="Audience partition instance/kind/key (repeatable).")
@click.option("--all-eligible", is_flag=True,
              help="Every partition with at least dream_min_inputs eligible inputs.")
@click.option("--instance", default=None, help="With --all-eligible: only this instance.")
@click.option("--model", default=None, help="Exact maintenance model (explicit choice).")
@click.option("--dry-run", is_flag=True, help="Proposals and diagnostics only.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Partitions per Dagster run (default MEMORY_DREAM_BATCH_SIZE).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object at the end.")
def dream_run(partitions: tuple[str, ...], all_eligible: bool, instance: str | None,
              model: str | None, dry_run: bool, batch_size: int | None,
              as_json: bool) -> None:
    """Dream audience partitions THROUGH DAGSTER, in this process, against the platform's
    Dagster instance: the runs, materialisations and checks appear in the Dagster UI.
    One partition is a run of dream_audience_job; several are dream_batch runs."""
    import warnings

    from dagster import BetaWarning, PreviewWarning

    from memory_platform.dreaming.inputs import eligible_partitions
    from memory_platform.dreaming.partitions import Partition
    from memory_platform.orchestration.launch import dagster_instance, execute_dreams

    for category in (BetaWarning, PreviewWarning):  # Dagster's own API notices
        warnings.filterwarnings("ignore", category=category)
    if bool(partitions) == all_eligible:
        raise click.UsageError("give --partition KEY (repeatable) or --all-eligible")
    settings = get_settings()
    with platform_connection(settings) as conn:
        if all_eligible:
            keys = [s.partition_key for s in
                    eligible_partitions(conn, settings, instance_key=instance)]
        else:
            keys = list(dict.fromkeys(partitions))
            for key in keys:
                try:
                    Partition.from_partition_key(key)
                except ValueError as exc:
                    raise click.BadParameter(str(exc), param_hint="--partition") from exc
    if not keys:
        click.echo("no eligible audience partition (each needs "
                   f"{settings.dream_min_inputs} eligible inputs)")
        return
    size = batch_size or settings.dream_batch_size
    dagster = dagster_instance(settings)
    say = (lambda _m: None) if as_json else (lambda m: click.echo(m, err=True))
    say(f"dreaming {len(keys)} partition(s) through Dagster"
        f"{' (dry run)' if dry_run else ''} (DAGSTER_HOME={settings.dagster_home}, "
        f"batch size {size})")

    def started(number: int, total: int, run) -> None:
        say(f"run {number}/{total}: {run.job_name} for {len(run.partition_keys)} "
            "partition(s) ...")

    rows: list[dict] = []

    def done(report) -> None:
        with platform_connection(settings) as conn:
            dreams = conn.execute(
                "SELECT id, partition_key, status, model, stats_json FROM agent_memory_dreams"
                " WHERE dagster_run_id = %s ORDER BY started_at", (report.run_id,)).fetchall()
        say(f"  run {report.run_id} {'succeeded' if report.success else 'FAILED'} in "
            f"{report.seconds:.1f}s" + (f": {report.error}" if report.error else ""))
        for dream_id, key, status, used_model, stats in dreams:
            rejected = stats.get("rejected") or {}
            row = {"dreamId": str(dream_id), "partition": key, "status": status,
                   "model": used_model, "runId": report.run_id,
                   "inputs": stats.get("inputsTotal", 0),
                   "accepted": stats.get("accepted", 0),
                   "activated": stats.get("activated", 0),
                   "rejected": sum(rejected.values()) if isinstance(rejected, dict) else 0,
                   "deferredEmbeddings": stats.get("deferredEmbeddings", 0)}
            rows.append(row)
            say(f"  {key}: {status} dream {dream_id} model={used_model} "
                f"inputs={row['inputs']} accepted={row['accepted']} "
                f"activated={row['activated']} rejected={row['rejected']}")

    try:
        reports = execute_dreams(dagster, keys, batch_size=size, model=model,
                                 dry_run=dry_run, trigger="manual", on_run=started,
                                 on_done=done)
    finally:
        dagster.dispose()
    failed = [r for r in reports if not r.success]
    if as_json:
        click.echo(json.dumps({"runs": [{"runId": r.run_id, "jobName": r.job_name,
                                         "success": r.success, "seconds": r.seconds,
                                         "partitions": r.partition_keys, "error": r.error}
                                        for r in reports], "dreams": rows}, indent=2))
    else:
        click.echo(f"{len(rows)} dream(s) in {len(reports)} run(s); "
                   f"{len(failed)} run(s) failed")
    if failed:
        sys.exit(1)


# --- dream list / rollback ------------------------------------------------------------------
def _short_time(value: str | None) -> str:
    return value[:19].replace("T", " ") if value else "-"


@dream.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@click.option("--instance", default=None, help="Only this instance (default: all).")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True,
              help="Newest rows shown.")
def dream_list(as_json: bool, instance: str | None, limit: int) -> None:
    """List dream rows, newest first: id, partition, status, exact model, times and key
    stats (inputs, accepted, activated, rejected)."""
    from memory_platform.dreaming.listing import dream_summary
    from memory_platform.dreaming.runs import list_dreams

    with platform_connection() as conn:
        rows = [dream_summary(r) for r in list_dreams(conn, instance_key=instance,
                                                      limit=limit)]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no dreams yet; run `memory-platform dream run --help`")
        return
    width = max(len(r["partitionKey"]) for r in rows)
    click.echo(f"{'id':<36}  {'partition':<{width}}  {'status':<11}  {'model':<16}  "
               f"{'started':<19}  {'finished':<19}  inputs  accepted  activated  rejected")
    for r in rows:
        s = r["stats"]

        def n(value) -> str:
            return "-" if value is None else str(value)

        click.echo(f"{r['id']}  {r['partitionKey']:<{width}}  "
                   f"{r['status'] + (' dry' if r['dryRun'] else ''):<11}  "
                   f"{(r['model'] or '-'):<16}  {_short_time(r['startedAt']):<19}  "
                   f"{_short_time(r['finishedAt']):<19}  {n(s['inputs']):>6}  "
                   f"{n(s['accepted']):>8}  {n(s['activated']):>9}  {n(s['rejected']):>8}")


@dream.command("rollback")
@click.argument("dream_id")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def dream_rollback(dream_id: str, as_json: bool) -> None:
    """Compensate one Dream's change set that no person has decided: its policy-activated
    assertions are tombstoned (or put back), their projections removed, its draft wiki
    proposals rejected. Human-reviewed assertions and approved/published wiki proposals are
    left as they are and reported as protected."""
    import uuid

    from memory_platform.dreaming.engine import DreamLocked, rollback_dream
    from memory_platform.errors import InvalidInput, NotFound

    try:
        parsed = uuid.UUID(dream_id)
    except ValueError as exc:
        raise click.ClickException(f"not a dream id: {dream_id!r}") from exc
    settings = get_settings()
    try:
        with platform_connection(settings) as conn:
            result = rollback_dream(conn, parsed, settings=settings)
    except (NotFound, InvalidInput) as exc:
        raise click.ClickException(exc.message) from exc
    except DreamLocked as exc:
        raise click.ClickException(f"{exc}; try again when the running Dream ends") from exc
    if as_json:
        click.echo(json.dumps(result.as_json(), indent=2))
        return
    if result.status == "already_rolled_back":
        click.echo(f"dream {parsed} was already rolled back; nothing changed")
        return
    click.echo(f"dream {parsed} rolled back:")
    click.echo(f"  tombstoned assertions:     {len(result.tombstoned)}")
    click.echo(f"  restored assertions:       {len(result.restored)}")
    click.echo(f"  evidence rows removed:     {result.evidence_removed}")
    click.echo(f"  wiki proposals rejected:   {len(result.proposals_rejected)}")
    click.echo(f"  projection jobs processed: {result.projection_jobs}")
    click.echo(f"  protected (left as they are): {len(result.protected)}")
    for item in result.protected:
        click.echo(f"    {item['kind']} {item['id']}: {item['reason']}")


# --- demo -----------------------------------------------------------------------------------
@main.group()
def demo() -> None:
    """A demo workspace to try Dreaming on."""


@demo.command("seed")
@click.option("--instance", default=None, show_default="demo",
              help="Instance to seed (default: demo).")
@click.option("--reset", is_flag=True,
              help="Delete the instance's memories first (only that instance); when the "
                   "append-only ledger blocks that, seed a fresh instance <instance>-N.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def demo_seed(instance: str | None, reset: bool, as_json: bool) -> None:
    """Write a German/English team workspace through the normal write path: four users
    (one opts out of sharing with the team), a team room with several human sessions,
    direct sessions, private notes, an unlinked Slack thread, and automation sessions that
    Dreaming must exclude. Idempotent (a second seed only hits dedup). Prints what it wrote
    and the partitions now eligible for Dreaming."""
    from memory_platform import demo as demo_workspace

    settings = get_settings()
    with platform_connection(settings) as conn:
        report = demo_workspace.seed_demo(
            conn, settings, instance_key=instance or demo_workspace.DEFAULT_INSTANCE,
            reset=reset)
    if as_json:
        click.echo(json.dumps(report.as_json(), indent=2))
        return
    if report.reset:
        click.echo(f"reset: {report.reset}")
    users = ", ".join(
        f"{u.user_id} ({'shares with the team' if u.shares_with_team else 'opts out'})"
        for u in demo_workspace.USERS)
    click.echo(f"instance {report.instance_key!r}; users: {users}")
    audiences = report.by_audience()
    width = max(len(a) for a in audiences)
    click.echo(f"  {'audience':<{width}}  written  deduplicated  summary  flush  fact  "
               "automation (excluded)")
    for audience, c in audiences.items():
        click.echo(f"  {audience:<{width}}  {c['written']:>7}  {c['deduplicated']:>12}  "
                   f"{c['summary']:>7}  {c['flush']:>5}  {c['fact']:>4}  {c['automation']:>10}")
    click.echo(f"{report.written} rows written, {report.deduplicated} deduplicated (already "
               f"there); {report.automation} rows come from automation sessions "
               f"({', '.join(sorted({r.session_key for r in report.rows if r.automation}))}) "
               "and are never Dreaming input.")
    click.echo(f"\nPartitions eligible for Dreaming (at least {report.min_inputs} inputs):")
    if not report.eligible:
        click.echo("  none")
    for p in report.eligible:
        pools = ", ".join(f"{k} {v}" for k, v in p.counts.items() if v)
        click.echo(f"  {p.partition_key}: {p.total} inputs ({pools}); "
                   f"{p.excluded_automation} automation rows excluded")
    click.echo("\nNext: memory-platform dream run --all-eligible --model extractive "
               f"--instance '{report.instance_key}'")
    if report.eligible:
        biggest = max(report.eligible, key=lambda p: p.total)
        click.echo("  (or one partition: memory-platform dream run --partition "
                   f"'{biggest.partition_key}' --model extractive)")
