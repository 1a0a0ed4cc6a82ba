"""`memory-platform keys`: developer API keys."""

from __future__ import annotations

import json

import click

from memory_platform.cli.common import platform_connection
from memory_platform.settings import get_settings


@click.group()
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
