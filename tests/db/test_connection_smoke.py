def test_migrated_database_has_pgvector_0_8(conn):
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    assert row is not None and row[0].startswith("0.8.")
