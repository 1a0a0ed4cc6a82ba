"""`memory-platform demo`: a demo workspace."""

from __future__ import annotations

import json

import click

from memory_platform.cli.common import PlatformGroup, platform_connection
from memory_platform.foundation.settings import get_settings


@click.group(cls=PlatformGroup)
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
    from memory_platform.features import demo as demo_workspace

    settings = get_settings()
    with platform_connection(settings) as conn:
        report = demo_workspace.seed_demo(
            conn, settings, instance_key=instance or demo_workspace.DEFAULT_INSTANCE,
            reset=reset)
    registered = _register_with_dagster(settings, [p.partition_key for p in report.eligible])
    if as_json:
        click.echo(json.dumps({**report.as_json(), "registeredWithDagster": registered},
                              indent=2))
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
    if registered:
        click.echo(f"\nRegistered {len(report.eligible)} partition(s) with Dagster: the "
                   "audience-partitions sensor (which Dreams a partition new to Dagster once) "
                   "leaves their first Dream to you; the daily schedule takes them from then "
                   "on.")
    click.echo("\nNext: memory-platform dream run --all-eligible --model extractive "
               f"--instance '{report.instance_key}'")
    if report.eligible:
        biggest = max(report.eligible, key=lambda p: p.total)
        click.echo("  (or one partition: memory-platform dream run --partition "
                   f"'{biggest.partition_key}' --model extractive)")
    member = next(u for u in demo_workspace.USERS if u.shares_with_team)
    click.echo("Then ask the API as a team member, with a key of this instance: "
               f"memory-platform keys create --instance '{report.instance_key}' "
               f"--user {member.user_id} --scopes memory:read")


def _register_with_dagster(settings, keys: list[str]) -> bool:
    """Make the eligible partitions known to Dagster, so the demo's first Dream is the one
    its user starts (README, 'Try it'), not the sensor's a minute after the seed. Answers
    whether it could; when Dagster's storage cannot be opened the seed stands and the sensor
    Dreams the partitions itself (trigger ``sensor``), which stderr says."""
    if not keys:
        return False
    from memory_platform.orchestration.home import dagster_instance
    from memory_platform.orchestration.partitions import register_partitions

    try:
        with dagster_instance(settings) as instance:
            register_partitions(instance, keys)
    except Exception as exc:  # any storage failure: the seed itself stands
        click.echo(f"note: could not register the partitions with Dagster ({exc}); the "
                   "audience-partitions sensor will Dream them on its own (trigger sensor)",
                   err=True)
        return False
    return True


COMMANDS = (demo,)  # collected by memory_platform.cli
