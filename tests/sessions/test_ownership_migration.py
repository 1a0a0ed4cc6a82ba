"""Migration 0027 on sessions that exist (review of 7c85f33, finding 1): an ownership that a
read claimed (the owner wrote nothing there) is dropped; owners who wrote are kept and told
apart by how they may have joined; participants stay."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg

from memory_platform.foundation.db import migrations
from tests.conftest import MIGRATIONS_DIR

SESSION_MIGRATION = "0027_session_ownership.sql"


def test_0027_drops_ownership_claimed_by_a_read_and_records_how_the_rest_joined(
        empty_database_url, tmp_path: Path):
    before = tmp_path / "migrations"
    before.mkdir()
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        if path.name < SESSION_MIGRATION:
            shutil.copy(path, before)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        migrations.migrate(conn, before)
        conn.execute("INSERT INTO api_keys (instance_key, token_prefix, token_hash, user_id,"
                     " scopes) SELECT 'I', u, md5(u), u, ARRAY['memory:read']"
                     "   FROM unnest(ARRAY['mallory', 'ada']) u")
        conn.execute(
            "INSERT INTO agent_session_participants (instance_key, session_key, user_id, role)"
            " VALUES ('I', 'web:alice:42', 'mallory', 'owner'),"   # claimed by a read
            "        ('I', 'web:alice:42', 'alice', 'participant'),"
            "        ('I', 'web:ada', 'ada', 'owner'),"            # alone, has a user key
            "        ('I', 'room:1', 'ada', 'owner'),"             # shared already
            "        ('I', 'room:1', 'bob', 'participant'),"
            "        ('I', 'slack:1', 'carol', 'owner')")          # no user key: the runtime
        conn.execute(
            "INSERT INTO agent_context_messages (instance_key, session_key, user_id, seq, role,"
            " content) VALUES ('I', 'web:alice:42', 'alice', 0, 'user', 'my turn'),"
            " ('I', 'web:ada', 'ada', 0, 'user', 'x'), ('I', 'room:1', 'ada', 0, 'user', 'x'),"
            " ('I', 'slack:1', 'carol', 0, 'user', 'x')")
        shutil.copy(MIGRATIONS_DIR / SESSION_MIGRATION, before)
        [applied] = migrations.migrate(conn, before)
        assert applied.version == 27
        rows = conn.execute("SELECT session_key, user_id, role, via"
                            "  FROM agent_session_participants ORDER BY 1, 2").fetchall()
    assert rows == [("room:1", "ada", "owner", "runtime"),
                    ("room:1", "bob", "participant", "runtime"),
                    ("slack:1", "carol", "owner", "runtime"),
                    ("web:ada", "ada", "owner", "user_key"),
                    ("web:alice:42", "alice", "participant", "runtime")]
