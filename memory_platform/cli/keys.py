"""`memory-platform keys`: API keys (user keys, agent keys and runtime keys)."""

from __future__ import annotations

import json

import click

from memory_platform.cli.common import PlatformGroup, platform_connection
from memory_platform.foundation.settings import get_settings

KINDS_HELP = (
    "A user key (--user) acts as its one user; --agent marks it as an agent's key (its "
    "writes are the agent's inference and wait for review). A runtime key (--runtime, no "
    "user) is the trusted agent runtime of the instance: it names the acting user per "
    "request and may register channel members and session participants. Only a person's "
    "key (a user key without --agent) may hold memory:review or admin."
)


@click.group(cls=PlatformGroup,
             help=f"API keys (bearer tokens of one instance). {KINDS_HELP}")
def keys() -> None:
    pass


@keys.command("create", help=f"Create a key and print its token ONCE (only a hash is stored). "
              f"{KINDS_HELP}")
@click.option("--user", "user_id", default=None,
              help="The user a user key acts as (always); not with --runtime.")
@click.option("--runtime", is_flag=True,
              help="A runtime key: no user; it names the acting user per request.")
@click.option("--agent", is_flag=True,
              help="A user key of an agent: its writes are assistant inference.")
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
@click.option("--scopes", required=True,
              help="Comma-separated: memory:read,memory:write,memory:review,admin "
                   "(memory:review and admin: a person's key only).")
@click.option("--name", default="", help="A label to recognise the key by.")
@click.option("--json", "as_json", is_flag=True, help='Print {"id": ..., "token": ...}.')
def keys_create(user_id: str | None, runtime: bool, agent: bool, instance: str | None,
                scopes: str, name: str, as_json: bool) -> None:
    from memory_platform.features import apikeys
    from memory_platform.foundation.errors import InvalidInput

    settings = get_settings()
    parsed = apikeys.parse_scopes(scopes)
    if not runtime and user_id is None:
        raise InvalidInput("a user key needs --user USER; a runtime key needs --runtime")
    with platform_connection(settings) as conn:
        key, token = apikeys.create_key(conn, instance_key=instance or settings.instance_key,
                                        user_id=user_id, scopes=parsed, name=name,
                                        runtime=runtime, agent=agent)
    if as_json:
        click.echo(json.dumps({"id": str(key.id), "token": token}))
        return
    holder = "the runtime" if key.runtime else f"user {key.user_id!r}"
    click.echo(f"{key.kind} key {key.id} for {holder} in instance {key.instance_key!r}, "
               f"scopes {','.join(key.scopes)}")
    click.echo(f"token (shown once, store it now): {token}")


@keys.command("list")
@click.option("--instance", default=None, help="Only this instance.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def keys_list(instance: str | None, as_json: bool) -> None:
    """List keys with their kind (user, agent, runtime); never their tokens."""
    from memory_platform.features import apikeys

    with platform_connection() as conn:
        found = apikeys.list_keys(conn, instance)
    rows = [{"id": str(k.id), "kind": k.kind, "instance": k.instance_key, "user": k.user_id,
             "name": k.name, "scopes": list(k.scopes), "prefix": k.token_prefix,
             "created_at": k.created_at.isoformat(),
             "last_used_at": k.last_used_at.isoformat() if k.last_used_at else None,
             "revoked": k.revoked_at is not None} for k in found]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no keys; create one with `memory-platform keys create --help`")
        return
    table = [("ID", "PREFIX", "KIND", "INSTANCE", "USER", "SCOPES", "STATE", "NAME")]
    table += [(r["id"], r["prefix"], r["kind"], r["instance"], r["user"] or "-",
               ",".join(r["scopes"]), "revoked" if r["revoked"] else "active", r["name"])
              for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
    for row in table:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
        click.echo("  ".join([*cells, row[-1]]).rstrip())


@keys.command("revoke")
@click.argument("key_id")
def keys_revoke(key_id: str) -> None:
    """Revoke a key; requests with its token get 401 within MEMORY_API_KEY_CACHE_SECONDS."""
    from memory_platform.features import apikeys

    with platform_connection() as conn:
        key = apikeys.revoke_key(conn, key_id)
    holder = "the runtime" if key.runtime else f"user {key.user_id!r}"
    click.echo(f"revoked {key.id} ({key.token_prefix}, {key.kind} key of {holder})")


COMMANDS = (keys,)  # collected by memory_platform.cli
