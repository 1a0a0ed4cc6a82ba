"""`memory-platform dream`: run (through Dagster), list, show and roll back Dreams; list and clean
up the audience partitions."""

from __future__ import annotations

import json
import sys

import click

from memory_platform.cli.common import PlatformGroup, platform_connection
from memory_platform.foundation.settings import get_settings


@click.group(cls=PlatformGroup)
def dream() -> None:
    """Dreaming: run (through Dagster), list and roll back Dreams."""


def _dream_row(row: dict, run_id: str) -> dict:
    """One dream of a run as `dream run` reports it (numbers 0 where the Dream did not get
    that far; ``reasons``: why it ended as it did, with what to do)."""
    from memory_platform.features.dreaming.summary import DreamStats, reasons

    stats = DreamStats.from_stats(row["stats_json"])
    return {"dreamId": str(row["id"]), "partition": row["partition_key"],
            "status": row["status"], "model": row["model"], "runId": run_id,
            "inputs": stats.inputs or 0, "accepted": stats.accepted or 0,
            "activated": stats.activated or 0, "rejected": stats.rejected or 0,
            "deferredEmbeddings": stats.deferred_embeddings or 0,
            "reasons": reasons(row["diagnostics"]) if row["status"] in ("skipped", "failed")
            else []}


@dream.command("run")
@click.option("--partition", "partitions", multiple=True, metavar="KEY",
              help="Audience partition instance/kind/key (repeatable; `dream partitions` "
              "lists them).")
@click.option("--all-eligible", is_flag=True,
              help="Every partition with at least dream_min_inputs eligible inputs.")
@click.option("--instance", default=None, help="With --all-eligible: only this instance.")
@click.option("--model", default=None, help="Exact maintenance model (explicit choice).")
@click.option("--dry-run", is_flag=True, help="Proposals and diagnostics only.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Partitions per Dagster run (default MEMORY_DREAM_BATCH_SIZE).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object at the end.")
@click.option("--verbose", is_flag=True, help="Show Dagster's own log (with stack traces).")
def dream_run(partitions: tuple[str, ...], all_eligible: bool, instance: str | None,
              model: str | None, dry_run: bool, batch_size: int | None,
              as_json: bool, verbose: bool) -> None:
    """Dream audience partitions THROUGH DAGSTER, in this process, against the platform's
    Dagster instance: the runs, materialisations and checks appear in the Dagster UI.
    One partition is a run of dream_audience_job; several are dream_batch runs. A partition
    the database does not know is refused (nothing is launched)."""
    import warnings

    from dagster import BetaWarning, PreviewWarning

    from memory_platform.features.dreaming.inputs import eligible_partitions
    from memory_platform.features.dreaming.runs import dreams_of_run
    from memory_platform.features.dreaming.targets import known_partitions
    from memory_platform.foundation.errors import InvalidInput
    from memory_platform.launch import execute_dreams
    from memory_platform.orchestration.home import dagster_instance

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
            try:
                keys = [p.partition_key for p in known_partitions(conn, partitions)]
            except InvalidInput as exc:
                raise click.BadParameter(exc.message, param_hint="--partition") from exc
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
            dreams = [_dream_row(r, report.run_id) for r in dreams_of_run(conn, report.run_id)]
        explained = any(d["status"] == "failed" for d in dreams)
        say(f"  run {report.run_id} {'succeeded' if report.success else 'FAILED'} in "
            f"{report.seconds:.1f}s"
            + (f": {report.error}" if report.error and not explained else ""))
        for row in dreams:
            rows.append(row)
            say(f"  {row['partition']}: {row['status']} dream {row['dreamId']} "
                f"model={row['model']} inputs={row['inputs']} accepted={row['accepted']} "
                f"activated={row['activated']} rejected={row['rejected']}")
            for reason in row["reasons"]:
                say(f"    why: {reason}")

    try:
        reports = execute_dreams(settings, dagster, keys, batch_size=size, model=model,
                                 dry_run=dry_run, trigger="manual", quiet=not verbose,
                                 on_run=started, on_done=done)
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


@dream.command("partitions")
@click.option("--remove", "remove", multiple=True, metavar="KEY",
              help="Delete this audience partition from the Dagster instance (repeatable); "
              "the database is not touched.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def dream_partitions(remove: tuple[str, ...], as_json: bool) -> None:
    """List the audience partitions: Dagster's (each marked known or UNKNOWN to the
    database: memories or dream rows) and the eligible ones Dagster does not have yet.
    --remove deletes a bad partition (a typo) from Dagster."""
    from memory_platform.features.dreaming.inputs import eligible_partitions
    from memory_platform.features.dreaming.partitions import Partition
    from memory_platform.features.dreaming.targets import partition_exists
    from memory_platform.orchestration.home import dagster_instance
    from memory_platform.orchestration.partitions import AUDIENCES

    settings = get_settings()
    dagster = dagster_instance(settings)
    try:
        in_dagster = dagster.get_dynamic_partitions(AUDIENCES)
        if remove:
            missing = [key for key in remove if key not in in_dagster]
            if missing:
                raise click.ClickException(
                    "not a Dagster audience partition: " + ", ".join(map(repr, missing))
                    + " (`memory-platform dream partitions` lists them)")
            for key in dict.fromkeys(remove):
                dagster.delete_dynamic_partition(AUDIENCES, key)
                click.echo(f"removed {key} from Dagster")
            return
        with platform_connection(settings) as conn:
            def known(key: str) -> bool:
                try:
                    return partition_exists(conn, Partition.from_partition_key(key))
                except ValueError:
                    return False

            rows = [{"partition": key, "dagster": True, "database": known(key)}
                    for key in sorted(in_dagster)]
            rows += [{"partition": s.partition_key, "dagster": False, "database": True}
                     for s in eligible_partitions(conn, settings)
                     if s.partition_key not in set(in_dagster)]
    finally:
        dagster.dispose()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no audience partition yet (the partitions sensor adds one when a "
                   "partition has eligible input)")
        return
    width = max(len(r["partition"]) for r in rows)
    click.echo(f"{'partition':<{width}}  state")
    for r in rows:
        if not r["dagster"]:
            state = "eligible, not in Dagster yet (the partitions sensor adds it)"
        elif r["database"]:
            state = "known"
        else:
            state = ("UNKNOWN to the database (remove it: memory-platform dream partitions "
                     f"--remove {r['partition']})")
        click.echo(f"{r['partition']:<{width}}  {state}")


def _short_time(value: str | None) -> str:
    return value[:19].replace("T", " ") if value else "-"


@dream.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@click.option("--instance", default=None, help="Only this instance (default: all).")
@click.option("--limit", type=click.IntRange(1, 1000), default=None,
              help="Newest rows shown (default: MEMORY_DREAM_LIST_LIMIT, 50).")
def dream_list(as_json: bool, instance: str | None, limit: int) -> None:
    """List dream rows, newest first: id, partition, status, exact model, times and key
    stats (inputs, accepted, activated, rejected)."""
    from memory_platform.features.dreaming.runs import list_dreams
    from memory_platform.features.dreaming.summary import dream_row_view

    limit = limit or get_settings().dream_list_limit
    with platform_connection() as conn:
        rows = [dream_row_view(r) for r in list_dreams(conn, instance_key=instance, limit=limit)]
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

    from memory_platform.features.dreaming.rollback import rollback_dream

    try:
        parsed = uuid.UUID(dream_id)
    except ValueError as exc:
        raise click.ClickException(f"not a dream id: {dream_id!r}") from exc
    settings = get_settings()
    with platform_connection(settings) as conn:
        result = rollback_dream(conn, parsed, settings=settings)
    if result.status != "already_rolled_back":
        _show_rollback_in_dagster(settings, result)
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


@dream.command("show")
@click.argument("dream_id")
@click.option("--instance", default=None,
              help="Only a Dream of this instance (default: the Dream's own).")
@click.option("--json", "as_json", is_flag=True, help="Print the full detail as JSON.")
def dream_show(dream_id: str, instance: str | None, as_json: bool) -> None:
    """One Dream in full: the effective model and its source, the proposals (a dry run's
    with what the policy would do), accepted items, rejected items with reason codes, the
    policy preview and the rollback state."""
    import uuid

    from memory_platform.features.dreaming.inspect import dream_detail
    from memory_platform.features.dreaming.runs import get_dream
    from memory_platform.foundation.errors import NotFound

    try:
        parsed = uuid.UUID(dream_id)
    except ValueError as exc:
        raise click.ClickException(f"not a dream id: {dream_id!r}") from exc
    with platform_connection() as conn:
        row = get_dream(conn, parsed)
        if row is None:
            raise NotFound(f"no dream {parsed}")
        detail = dream_detail(conn, instance or row["instance_key"], parsed)
    if as_json:
        click.echo(json.dumps(detail, indent=2, default=str))
        return
    for line in show_lines(detail):
        click.echo(line)


def show_lines(d: dict) -> list[str]:
    """`dream show` as text lines."""
    model, stats, rollback = d["effectiveModel"], d["stats"], d["rollback"]
    out = [f"dream {d['id']}  {d['partitionKey']}",
           f"  status:  {d['status']}{' (dry run)' if d['dryRun'] else ''}  "
           f"trigger={d['trigger'] or '-'}  dagster run={d['dagsterRunId'] or '-'}",
           f"  model:   {model['model'] or '-'} (source: {model['source'] or '-'})",
           f"  started: {_short_time(d['startedAt'])}  finished: "
           f"{_short_time(d['finishedAt'])}",
           f"  counts:  inputs={stats.get('inputs')} accepted={stats.get('accepted')} "
           f"activated={stats.get('activated')} rejected={stats.get('rejected')}"]
    if d["error"]:
        out.append(f"  error:   {d['error']}")
    for diag in d["diagnosticsFull"]:
        out.append(f"  diagnostic {diag.get('code')} ({diag.get('phase')}): "
                   f"{diag.get('message')}")
    if d["dryRun"]:
        out.append(f"dry-run proposals ({len(d['dryRunProposals'])}):")
        for p in d["dryRunProposals"]:
            out.append(f"  #{p['index']} [{p['type']}] {p['text']}")
            out.append(f"      would: {p['decision'] or '-'} ({p['reasonCode'] or '-'})")
            for excerpt in p["evidence"]:
                out.append(f"      evidence: {excerpt}")
    else:
        proposed = (d["proposals"] or {}).get("assertions") or []
        out.append(f"proposals: {len(proposed)} assertion(s), "
                   f"{len((d['proposals'] or {}).get('wikiProposals') or [])} wiki proposal(s)")
        out.append(f"accepted ({len(d['accepted'])}):")
        for a in d["accepted"]:
            out.append(f"  {a['assertionId']} {'created' if a['created'] else 'reused'} "
                       f"{a['status']}/{a['reviewState']} ({a['reasonCode'] or '-'}): "
                       f"{a['text']}")
    out.append(f"rejected ({len(d['rejected'])}):")
    for r in d["rejected"]:
        out.append(f"  {r['stage']}: {r['kind']} {r['item']}: {r['reasonCode']}"
                   + (f" - {r['text']}" if r.get("text") else ""))
    for w in d["wikiProposals"]:
        out.append(f"wiki proposal {w['id']} {w['state']}: {w['title']}")
    if rollback["rolledBack"]:
        out.append(f"rolled back at {_short_time(rollback['rolledBackAt'])}: "
                   f"{rollback['reverted']} reverted, {rollback['keptByPerson']} kept "
                   "because a person decided them")
    else:
        out.append("rollback: not rolled back (`memory-platform dream rollback ID`)")
    return out


def _show_rollback_in_dagster(settings, result) -> None:
    """The rollback on the Dream's partition in the Dagster UI (best effort: the ledger change
    stands whatever Dagster's storage says)."""
    from memory_platform.launch import show_rollback_in_dagster

    try:
        show_rollback_in_dagster(settings, result)
    except Exception as exc:  # reported, not fatal: the rollback itself is done
        click.echo(f"note: the rollback could not be shown in Dagster ({exc})", err=True)


COMMANDS = (dream,)  # collected by memory_platform.cli
