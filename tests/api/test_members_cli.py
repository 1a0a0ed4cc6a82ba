"""`memory-platform members add|remove|list` and `memory-platform sessions add|list`: the
memberships a user key needs before it may name a channel, room or session."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memory_platform.cli import main
from memory_platform.foundation.settings import get_settings
from tests.api.conftest import assert_error, bearer, open_client

THREAD = "slack:C1/T9:1712.5"


@pytest.fixture
def cli(monkeypatch, database_url):
    """``cli(*args)`` runs ``memory-platform ...`` against the test database."""
    monkeypatch.setenv("MEMORY_DATABASE_URL", database_url)
    monkeypatch.delenv("MEMORY_INSTANCE_KEY", raising=False)
    get_settings.cache_clear()
    runner = CliRunner()

    def run(*args: str, ok: bool = True):
        result = runner.invoke(main, list(args))
        if ok:
            assert result.exit_code == 0, result.output
        return result

    yield run
    get_settings.cache_clear()


@pytest.mark.parametrize("command", [("members",), ("members", "add"), ("members", "remove"),
                                     ("members", "list"), ("sessions",), ("sessions", "add"),
                                     ("sessions", "list")])
def test_every_membership_command_has_help(cli, command):
    assert "Usage:" in cli(*command, "--help").output


def test_members_add_lets_a_user_key_name_the_channel(cli, api_settings, make_key):
    alice = bearer(make_key("alice"))
    with open_client(api_settings) as client:
        def search():
            return client.get("/api/v1/memory", headers=alice,
                              params={"query": "x", "channelThreadKey": THREAD})

        assert_error(search(), 403, "not_a_member")
        assert "is now a member" in cli("members", "add", "--channel", THREAD,
                                        "--user", "alice").output
        assert "already was" in cli("members", "add", "--channel", THREAD,
                                    "--user", "alice").output
        assert search().status_code == 200
        cli("members", "remove", "--channel", THREAD, "--user", "alice")
        assert_error(search(), 403, "not_a_member")


def test_members_list_and_remove(cli):
    cli("members", "add", "--channel", THREAD, "--user", "alice")
    cli("members", "add", "--channel", "room-7", "--user", "bob")
    cli("members", "add", "--channel", "room-7", "--user", "bob", "--instance", "acme")
    header, *lines = cli("members", "list").output.splitlines()
    assert header.split()[:2] == ["CHANNEL", "USER"]
    assert [line.split()[:2] for line in lines] == [["room-7", "bob"], [THREAD, "alice"]]
    rows = json.loads(cli("members", "list", "--user", "bob", "--json").output)
    assert [(r["channel"], r["user"], r["added_by"]) for r in rows] == [("room-7", "bob", "cli")]

    result = cli("members", "remove", "--channel", THREAD, "--user", "bob", ok=False)
    assert result.exit_code != 0 and "is not a member" in result.output
    cli("members", "remove", "--channel", "room-7", "--user", "bob")
    assert json.loads(cli("members", "list", "--user", "bob", "--json").output) == []
    acme = json.loads(cli("members", "list", "--instance", "acme", "--json").output)
    assert [r["user"] for r in acme] == ["bob"]
    assert "no memberships" in cli("members", "list", "--instance", "globex").output


def test_sessions_add_and_list(cli, api_settings, make_key):
    alice, bob = bearer(make_key("alice")), bearer(make_key("bob"))
    # Membership, not admission: no thread-wait limit (a busy CI machine answered one of these
    # requests 503 waited_too_long).
    unhurried = api_settings.model_copy(update={"api_admission_wait_ms": 0})
    with open_client(unhurried) as client:
        def search(headers):
            return client.get("/api/v1/memory", headers=headers,
                              params={"query": "x", "sessionKey": "web:alice"})

        # A read claims nothing; alice's first append makes the session hers.
        assert search(alice).status_code == 200 and search(bob).status_code == 200
        appended = client.post("/api/v1/sessions/web:alice/items", headers=alice,
                               json={"items": [{"role": "user", "content": "Hello there"}]})
        assert appended.status_code == 201, appended.text
        assert_error(search(bob), 403, "foreign_session")
        assert "now takes part" in cli("sessions", "add", "--session", "web:alice",
                                       "--user", "bob").output
        assert search(bob).status_code == 200
    rows = json.loads(cli("sessions", "list", "--session", "web:alice", "--json").output)
    assert [(r["user"], r["role"]) for r in rows] == [("alice", "owner"), ("bob", "participant")]
    assert "nobody takes part" in cli("sessions", "list", "--session", "web:none").output
    result = cli("members", "add", "--channel", " ", "--user", "alice", ok=False)
    assert result.exit_code != 0 and "channelKey is required" in result.output
