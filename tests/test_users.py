"""Users of an instance and their share-with-team preference (memory_platform/shared/users.py,
memories/sharing.py, the CLI `users list/share`, the admin handlers in api/routes/users.py).

Real PostgreSQL: one migrated database per module (``db``), tests apart by instance key.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from mcp.client import Client
from psycopg.rows import dict_row

from api.errors import ApiError
from api.routes.users import require_person, user_out
from memory_platform.cli.users import users as users_cli
from memory_platform.features.apikeys import create_key
from memory_platform.features.memories.sharing import share_preference
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.settings import get_settings
from memory_platform.mcp import build_server
from memory_platform.shared.access import AccessContext
from memory_platform.shared.users import get_user, list_users, register_user, set_sharing
from tests.support.settings import hash_embedding_settings

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def hash_settings(module_database_url, tmp_path):
    return hash_embedding_settings(module_database_url, data_dir=tmp_path / "state")


def _write(db, settings, ctx, content):
    return store_memory(db, settings, ctx, MemoryWrite(content))


def _visibility(db, memory_id) -> tuple[str, str]:
    row = db.cursor(row_factory=dict_row).execute(
        "SELECT visibility_scope, audience_key FROM agent_memories WHERE id = %s",
        (memory_id,)).fetchone()
    return row["visibility_scope"], row["audience_key"]


def _user_key(db, instance, user, *scopes, agent=False):
    return create_key(db, instance_key=instance, user_id=user, scopes=scopes or ("memory:write",),
                      agent=agent)[0]


# --- the registry -----------------------------------------------------------------------

def test_a_key_with_a_user_registers_the_user_once(db, instance):
    key = _user_key(db, instance, "ada")
    _user_key(db, instance, "ada", "memory:read")
    (ada,) = list_users(db, instance)
    assert (ada.user_id, ada.created_by) == ("ada", f"api key {key.token_prefix}")
    assert ada.share_stored is None and ada.shares_with_team


def test_a_runtime_key_registers_nobody(db, instance):
    create_key(db, instance_key=instance, user_id=None, scopes=("memory:write",), runtime=True)
    assert list_users(db, instance) == []


def test_register_user_is_idempotent_and_checks_the_id(db, instance):
    assert register_user(db, instance, "bob", created_by="admin key x") is True
    assert register_user(db, instance, "bob", created_by="cli") is False
    assert get_user(db, instance, "bob").created_by == "admin key x"
    with pytest.raises(InvalidInput):
        register_user(db, instance, "  ", created_by="cli")
    with pytest.raises(InvalidInput):
        register_user(db, instance, "a\x00b", created_by="cli")


def test_users_are_per_instance(db, instance):
    register_user(db, instance, "ada", created_by="cli")
    assert list_users(db, instance + "-other") == []


# --- the preference ---------------------------------------------------------------------

def test_a_new_users_default_write_lands_in_the_team_then_stays_private_after_opting_out(
        db, hash_settings, instance):
    _user_key(db, instance, "ada")                      # ada's first key registers her
    ctx = AccessContext(instance, user_id="ada")
    shared = _write(db, hash_settings, ctx, "Ada files the VAT return on the tenth.")
    assert _visibility(db, shared.id) == ("team", instance)

    set_sharing(db, instance, "ada", False, changed_by="cli")
    private = _write(db, hash_settings, ctx, "Ada prefers invoices as PDF files.")
    assert _visibility(db, private.id) == ("private", "ada")
    # the change moved nothing that existed
    assert _visibility(db, shared.id) == ("team", instance)

    set_sharing(db, instance, "ada", True, changed_by="cli")
    assert _visibility(db, private.id) == ("private", "ada")   # turning it on narrows nothing
    again = _write(db, hash_settings, ctx, "Ada reviews the payroll on Fridays.")
    assert _visibility(db, again.id) == ("team", instance)


def test_an_explicit_false_is_respected_in_a_channel_session(db, hash_settings, instance):
    register_user(db, instance, "ada", created_by="cli")
    set_sharing(db, instance, "ada", False, changed_by="cli")
    ctx = AccessContext(instance, user_id="ada", group_room_id="room-1")
    assert share_preference(db, ctx) is False


def test_an_unregistered_user_stays_private(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="nobody-registered")
    assert share_preference(db, ctx) is None
    stored = _write(db, hash_settings, ctx, "An unregistered user's note stays private.")
    assert _visibility(db, stored.id) == ("private", "nobody-registered")


def test_an_unreadable_registry_fails_closed_to_private(db, hash_settings, instance):
    register_user(db, instance, "ada", created_by="cli")
    db.execute("ALTER TABLE agent_users RENAME TO agent_users_gone")
    try:
        ctx = AccessContext(instance, user_id="ada")
        assert share_preference(db, ctx) is None
        stored = _write(db, hash_settings, ctx, "Written while the registry is unreadable.")
    finally:
        db.execute("ALTER TABLE agent_users_gone RENAME TO agent_users")
    assert _visibility(db, stored.id) == ("private", "ada")


def test_set_sharing_records_who_and_registers(db, instance):
    user = set_sharing(db, instance, "carla", False, changed_by="admin key abc")
    assert (user.share_stored, user.share_changed_by, user.created_by) == (
        False, "admin key abc", "admin key abc")
    assert not user.shares_with_team
    with pytest.raises(InvalidInput):
        set_sharing(db, instance, "carla", True, changed_by="")
    out = user_out(user).model_dump(by_alias=True)
    assert (out["userId"], out["sharesWithTeam"], out["shareIsDefault"]) == (
        "carla", False, False)


# --- only a person ----------------------------------------------------------------------

def test_only_a_persons_admin_key_may_change_sharing(db, instance):
    admin = _user_key(db, instance, "root", "admin")
    assert require_person(admin) == f"admin key {admin.token_prefix}"
    # Agent and runtime keys cannot hold admin (migration 0028); a key forced to is no person.
    agent = replace(_user_key(db, instance, "ada", "memory:write", agent=True),
                    scopes=("admin", "memory:write"))
    runtime = replace(create_key(db, instance_key=instance, user_id=None,
                                 scopes=("memory:read",), runtime=True)[0],
                      scopes=("admin", "runtime"))
    plain = _user_key(db, instance, "bob", "memory:write")
    for key, code in ((agent, "person_required"), (runtime, "person_required"),
                      (plain, "missing_scope")):
        with pytest.raises(ApiError) as caught:
            require_person(key)
        assert caught.value.status == 403
        assert caught.value.code == code


def test_no_mcp_tool_can_change_sharing():
    async def tool_names() -> list[str]:   # every tool, both tokens set (no API is called)
        server = build_server({"MEMORY_READ_TOKEN": "mpk_read", "MEMORY_WRITE_TOKEN": "mpk_w"})
        async with Client(server) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    names = anyio.run(tool_names)
    assert "memory_store" in names                       # the listing finds the tools
    assert not [n for n in names if "shar" in n or "prefer" in n or "user" in n]
    for path in (ROOT / "memory_platform" / "mcp").glob("*.py"):
        source = path.read_text()
        assert "/users" not in source and "sharing" not in source, path.name


# --- the CLI ----------------------------------------------------------------------------

@pytest.fixture
def cli_env(monkeypatch, module_database_url):
    monkeypatch.setenv("MEMORY_DATABASE_URL", module_database_url)
    monkeypatch.delenv("MEMORY_INSTANCE_KEY", raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_cli_share_and_list(cli_env, db, instance):
    runner = CliRunner()
    done = runner.invoke(users_cli, ["share", "erin", "--on", "--instance", instance])
    assert done.exit_code == 0, done.output
    assert get_user(db, instance, "erin").share_changed_by == "cli"
    instance_args = ["--instance", instance]
    done = runner.invoke(users_cli, ["share", "dora", "--off", *instance_args])
    assert done.exit_code == 0, done.output
    assert "private" in done.output
    listed = runner.invoke(users_cli, ["list", "--json", *instance_args])
    assert listed.exit_code == 0, listed.output
    dora, _ = json.loads(listed.output)
    assert (dora["userId"], dora["sharesWithTeam"], dora["shareChangedBy"]) == (
        "dora", False, "cli")
    text = runner.invoke(users_cli, ["list", *instance_args]).output
    assert "dora\tprivate (set by cli)" in text and "erin\tshares with team" in text
    # --on/--off is required
    assert runner.invoke(users_cli, ["share", "dora", *instance_args]).exit_code != 0
