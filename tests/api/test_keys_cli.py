"""`memory-platform keys create|list|revoke`: a token is shown once, only its hash is kept,
and a revoked token stops working."""

from __future__ import annotations

import hashlib
import json

import psycopg
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from api.app import create_app
from memory_platform.cli import main
from memory_platform.foundation.settings import get_settings
from tests.api.conftest import assert_error, bearer


@pytest.fixture
def keys_cli(monkeypatch, database_url):
    """``keys_cli(*args)`` runs ``memory-platform keys ...`` against the test database."""
    monkeypatch.setenv("MEMORY_DATABASE_URL", database_url)
    monkeypatch.delenv("MEMORY_INSTANCE_KEY", raising=False)
    get_settings.cache_clear()
    runner = CliRunner()

    def run(*args: str, ok: bool = True):
        result = runner.invoke(main, ["keys", *args])
        if ok:
            assert result.exit_code == 0, result.output
        return result

    yield run
    get_settings.cache_clear()


def _create_json(keys_cli, user: str = "alice", scopes: str = "memory:read") -> dict:
    return json.loads(keys_cli("create", "--user", user, "--scopes", scopes, "--json").output)


def _api_keys_rows(database_url: str) -> list[tuple]:
    with psycopg.connect(database_url, autocommit=True) as connection:
        return connection.execute(
            "SELECT id::text, row_to_json(k)::text, token_hash FROM api_keys k").fetchall()


def test_keys_create_prints_the_token_exactly_once(keys_cli):
    result = keys_cli("create", "--user", "alice", "--scopes", "memory:read,memory:write")
    token_lines = [line for line in result.output.splitlines() if "mpk_" in line]
    assert len(token_lines) == 1 and "shown once" in token_lines[0]
    token = token_lines[0].rsplit(" ", 1)[-1]
    assert token.startswith("mpk_") and len(token) > 40
    assert result.output.count(token) == 1


def test_keys_create_json_prints_only_id_and_token(keys_cli, database_url):
    created = _create_json(keys_cli)
    assert set(created) == {"id", "token"}
    assert [row[0] for row in _api_keys_rows(database_url)] == [created["id"]]


def _secret(token: str) -> str:
    """The secret part of ``mpk_<public>_<secret>`` (the secret itself may contain "_")."""
    return token.split("_", 2)[2]


def test_keys_store_only_the_sha256_of_the_token(keys_cli, database_url):
    token = _create_json(keys_cli)["token"]
    (_, row_json, token_hash), = _api_keys_rows(database_url)
    assert token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in row_json and _secret(token) not in row_json


def test_keys_create_binds_the_key_to_user_instance_and_scopes(keys_cli, database_url):
    created = json.loads(keys_cli("create", "--user", "carol", "--instance", "acme",
                                  "--scopes", "memory:write,admin", "--json").output)
    with psycopg.connect(database_url, autocommit=True) as connection:
        row = connection.execute("SELECT user_id, instance_key, scopes FROM api_keys"
                                 " WHERE id = %s", (created["id"],)).fetchone()
    assert row == ("carol", "acme", ["memory:write", "admin"])


def test_keys_create_refuses_unknown_scopes_and_stores_nothing(keys_cli, database_url):
    result = keys_cli("create", "--user", "alice", "--scopes", "memory:read,root", ok=False)
    assert result.exit_code != 0 and "root" in result.output
    assert _api_keys_rows(database_url) == []


def test_keys_list_never_prints_tokens(keys_cli):
    tokens = [_create_json(keys_cli, user)["token"] for user in ("alice", "bob")]
    plain = keys_cli("list").output
    as_json = keys_cli("list", "--json").output
    for token in tokens:
        secret = _secret(token)
        assert len(secret) >= 40
        assert token not in plain and secret not in plain
        assert token not in as_json and secret not in as_json
    rows = json.loads(as_json)
    assert {r["user"] for r in rows} == {"alice", "bob"}
    assert all("token" not in r for r in rows)


def test_keys_revoke_makes_the_token_unauthorized(keys_cli, api_settings):
    created = _create_json(keys_cli)
    with TestClient(create_app(api_settings), raise_server_exceptions=False) as client:
        before = client.get("/api/v1/memory", params={"query": "anything"},
                            headers=bearer(created["token"]))
        assert before.status_code == 200, before.text
        keys_cli("revoke", created["id"])
        after = client.get("/api/v1/memory", params={"query": "anything"},
                           headers=bearer(created["token"]))
    assert_error(after, 401, "unauthorized")
    listed = json.loads(keys_cli("list", "--json").output)
    assert [r["revoked"] for r in listed] == [True]


def test_keys_revoke_of_an_unknown_id_fails_clearly(keys_cli):
    result = keys_cli("revoke", "00000000-0000-0000-0000-000000000000", ok=False)
    assert result.exit_code != 0 and "no API key" in result.output


def test_keys_create_runtime_makes_a_key_without_a_user_holding_runtime(keys_cli, database_url):
    created = json.loads(keys_cli("create", "--runtime", "--instance", "acme", "--scopes",
                                  "memory:read,memory:write", "--json").output)
    with psycopg.connect(database_url, autocommit=True) as connection:
        row = connection.execute("SELECT user_id, instance_key, scopes, agent FROM api_keys"
                                 " WHERE id = %s", (created["id"],)).fetchone()
    assert row == (None, "acme", ["memory:read", "memory:write", "runtime"], False)
    plain = keys_cli("create", "--runtime", "--scopes", "memory:read").output
    assert "runtime key" in plain and "for the runtime" in plain


def test_keys_create_agent_marks_a_user_key(keys_cli, database_url):
    created = json.loads(keys_cli("create", "--user", "alice", "--agent", "--scopes",
                                  "memory:write", "--json").output)
    with psycopg.connect(database_url, autocommit=True) as connection:
        row = connection.execute("SELECT user_id, scopes, agent FROM api_keys WHERE id = %s",
                                 (created["id"],)).fetchone()
    assert row == ("alice", ["memory:write"], True)


@pytest.mark.parametrize(("args", "message"), [
    (("--runtime", "--user", "alice"), "no user of its own"),
    (("--runtime", "--agent"), "--agent marks a user key"),
    ((), "needs --user"),
    (("--user", "  "), "needs a user"),
    (("--user", "alice", "--scopes", "runtime"), "--runtime"),
], ids=["runtime-with-user", "runtime-agent", "no-user", "blank-user", "runtime-scope"])
def test_keys_create_refuses_a_key_of_no_clear_kind_and_stores_nothing(keys_cli, database_url,
                                                                       args, message):
    scopes = () if "--scopes" in args else ("--scopes", "memory:read")
    result = keys_cli("create", *args, *scopes, ok=False)
    assert result.exit_code != 0 and message in result.output, result.output
    assert _api_keys_rows(database_url) == []


def test_keys_list_shows_a_header_and_the_kind_of_each_key(keys_cli):
    _create_json(keys_cli, "alice")
    keys_cli("create", "--user", "bob", "--agent", "--scopes", "memory:write")
    keys_cli("create", "--runtime", "--scopes", "memory:read")
    header, *lines = keys_cli("list").output.splitlines()
    assert header.split()[:6] == ["ID", "PREFIX", "KIND", "INSTANCE", "USER", "SCOPES"]
    kinds = {line.split()[2]: line.split()[4] for line in lines}
    assert kinds == {"user": "alice", "agent": "bob", "runtime": "-"}
    rows = json.loads(keys_cli("list", "--json").output)
    assert {(r["kind"], r["user"]) for r in rows} == {("user", "alice"), ("agent", "bob"),
                                                       ("runtime", None)}


def test_a_runtime_key_from_the_cli_acts_for_the_user_it_names(keys_cli, api_settings):
    runtime = json.loads(keys_cli("create", "--runtime", "--scopes",
                                  "memory:read,memory:write", "--json").output)["token"]
    with TestClient(create_app(api_settings), raise_server_exceptions=False) as client:
        stored = client.post("/api/v1/memory", headers=bearer(runtime), json={
            "content": "Carol prefers the quiet room.", "context": {"userId": "carol"}})
        assert stored.status_code == 201, stored.text
        assert stored.json()["audience"] == {"kind": "private", "key": "carol"}


@pytest.mark.parametrize("kind", [("--user", "carol", "--agent"), ("--runtime",)],
                         ids=["agent", "runtime"])
@pytest.mark.parametrize("scopes", ["memory:read,memory:write,memory:review",
                                    "memory:read,admin", "memory:review"])
def test_f4_an_agent_or_runtime_key_cannot_hold_review_or_admin(keys_cli, database_url,
                                                                kind, scopes):
    """Issue 28 finding 4: `keys create --agent --scopes ...,memory:review` made a key that
    approved its own inference. Refused at creation, and by the database if forced."""
    result = keys_cli("create", *kind, "--scopes", scopes, ok=False)
    assert result.exit_code != 0, result.output
    assert "only a person's key may review or administer" in result.output, result.output
    assert _api_keys_rows(database_url) == []
    agent, user = kind[0] == "--user", "carol" if kind[0] == "--user" else None
    with psycopg.connect(database_url, autocommit=True) as connection:
        with pytest.raises(psycopg.errors.CheckViolation, match="api_keys_person_scopes_check"):
            connection.execute(
                "INSERT INTO api_keys (instance_key, user_id, token_prefix, token_hash,"
                " scopes, agent) VALUES ('default', %s, 'mpk_forged0000', 'x', %s, %s)",
                (user, scopes.split(",") + ([] if agent else ["runtime"]), agent))
    assert _api_keys_rows(database_url) == []


def test_f4_a_persons_key_still_holds_review_and_admin(keys_cli, database_url):
    created = _create_json(keys_cli, "rita", "memory:read,memory:review,admin")
    with psycopg.connect(database_url, autocommit=True) as connection:
        row = connection.execute("SELECT scopes, agent FROM api_keys WHERE id = %s",
                                 (created["id"],)).fetchone()
    assert row == (["memory:read", "memory:review", "admin"], False)


def test_f4_migration_0028_takes_review_and_admin_from_existing_agent_and_runtime_keys(
        empty_database_url, tmp_path):
    """Keys made before 0028: a live agent or runtime key loses memory:review and admin and
    keeps the rest; an agent key that held nothing else is revoked; a person's key, and a
    revoked key, keep theirs."""
    import shutil

    from memory_platform.foundation.db import migrations
    from tests.conftest import MIGRATIONS_DIR

    before = tmp_path / "before"
    before.mkdir()
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        if int(path.name[:4]) < 28:
            shutil.copy(path, before / path.name)
    keys = [("agent-mixed", "carol", ["memory:read", "memory:review", "admin"], True, False),
            ("agent-only", "carol", ["memory:review"], True, False),
            ("runtime", None, ["memory:read", "admin", "runtime"], False, False),
            ("person", "rita", ["memory:read", "memory:review", "admin"], False, False),
            ("agent-revoked", "carol", ["memory:review"], True, True)]
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        migrations.migrate(conn, before)
        for name, user, scopes, agent, revoked in keys:
            conn.execute("INSERT INTO api_keys (instance_key, user_id, name, token_prefix,"
                         " token_hash, scopes, agent, revoked_at) VALUES ('default', %s, %s,"
                         " %s, %s, %s, %s, CASE WHEN %s THEN now() END)",
                         (user, name, f"mpk_{name}", name, scopes, agent, revoked))
        shutil.copy(MIGRATIONS_DIR / "0028_people_review.sql", before)
        assert [m.version for m in migrations.migrate(conn, before)] == [28]
        rows = {r[0]: (r[1], r[2]) for r in conn.execute(
            "SELECT name, scopes, revoked_at IS NOT NULL FROM api_keys")}
    assert rows == {"agent-mixed": (["memory:read"], False),
                    "agent-only": (["memory:review"], True),
                    "runtime": (["memory:read", "runtime"], False),
                    "person": (["memory:read", "memory:review", "admin"], False),
                    "agent-revoked": (["memory:review"], True)}
