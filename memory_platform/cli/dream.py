"""`memory-platform dream`: run (through Dagster), list and roll back Dreams."""

from __future__ import annotations

import json
import sys

import click

from memory_platform.cli.common import platform_connection
from memory_platform.settings import get_settings


@click.group()
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
