"""Export -> import round trip into a fresh database (same search results, a second import
adds nothing, rewriting with the write's guards) and the migration from mem0. Damaged and
crafted files: tests/portability/test_damaged.py, test_crafted.py."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from pgvector.psycopg import register_vector

from memory_platform.features.demo import SLACK_THREAD, TEAM_ROOM, seed_demo
from memory_platform.features.graph.build import process_graph_jobs
from memory_platform.features.graph.model import GraphModel
from memory_platform.features.maintenance.reembedding import convert
from memory_platform.features.memories.bulk import import_memories
from memory_platform.features.memories.bulk.reader import context_from_row
from memory_platform.features.portability import export_instance, import_export
from memory_platform.features.portability.format import KINDS
from memory_platform.features.portability.mem0 import bulk_rows, read_mem0
from memory_platform.features.portability.rewrite import Rewriter, parse_map
from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.review.decisions import decide_pending
from memory_platform.features.sessions.items import TurnItem, append_items
from memory_platform.foundation.db.connection import with_database
from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.factory import get_provider
from memory_platform.shared.llm.selection import OFFLINE_MODEL
from tests.conftest import create_database, drop_database
from tests.support.settings import hash_embedding_settings

INSTANCE = "port-demo"
OFFLINE = GraphModel(OFFLINE_MODEL, "explicit", None)
FIXTURE = Path(__file__).parent / "fixtures" / "mem0_export.json"
DOCS = Path(__file__).resolve().parents[2] / "docs"
QUERIES = ("staging database restored", "code reviews working day", "Deployment Smoke-Tests",
           "support thread escalation request id", "Dora Meetings Vormittag", "invoices PDF",
           "Dagster code location", "pgvector HNSW")
# Tables compared row for row; the history also gets one row per assertion at import time
# (its insert trigger), so it is compared as "at least".
COUNTED = [k.table for k in KINDS if not k.vector and k.name != "history"] + [
    "agent_memory_chunks"]


def _connect(url: str) -> psycopg.Connection:
    conn = psycopg.connect(url, autocommit=True)
    register_vector(conn)
    return conn


@pytest.fixture
def second_database(server_url: str, template_database: str) -> Iterator[str]:
    name = create_database(server_url, template=template_database)
    yield with_database(server_url, name)
    drop_database(server_url, name)


def _settings(url: str, tmp: Path) -> Settings:
    return hash_embedding_settings(url, data_dir=tmp / "state")


def _populate(conn, settings: Settings) -> None:
    embedder = get_provider(settings)
    seed_demo(conn, settings, instance_key=INSTANCE, embedder=embedder)
    decide_pending(conn, settings, AccessContext(INSTANCE, user_id="anna"), "approve",
                   limit=3, reason_code="checked", key_kind="user")
    decide_pending(conn, settings, AccessContext(INSTANCE, user_id="anna"), "reject",
                   limit=1, reason_code="wrong", key_kind="user")
    append_items(conn, settings, AccessContext(INSTANCE, user_id="dora",
                                               session_key="port-session"),
                 [TurnItem("user", "Please remember that my invoices go out as PDF."),
                  TurnItem("assistant", "Noted: invoices as PDF.")], run_id="run-1")
    process_graph_jobs(conn, settings, instance_key=INSTANCE, model=OFFLINE)
    pair = conn.execute(
        "SELECT id FROM agent_memory_assertions WHERE instance_key = %s AND audience_kind ="
        " 'team' ORDER BY created_at, id LIMIT 2", (INSTANCE,)).fetchall()
    conn.execute(
        "INSERT INTO agent_memory_assertion_conflicts (instance_key, audience_kind,"
        " audience_key, assertion_id, conflicting_assertion_id, detected_by, reason)"
        " VALUES (%s, 'team', %s, %s, %s, 'human', 'test')",
        (INSTANCE, INSTANCE, pair[0][0], pair[1][0]))


def _counts(conn, instance: str) -> dict[str, int]:
    return {t: conn.execute(f"SELECT count(*) FROM {t} WHERE instance_key = %s",  # noqa: S608
                            (instance,)).fetchone()[0] for t in COUNTED}


def _searches(conn, settings: Settings, instance: str) -> list[list[str]]:
    embedder = get_provider(settings)
    conn.execute("ANALYZE")
    contexts = [AccessContext(instance, user_id="anna"), AccessContext(instance, user_id="dora"),
                AccessContext(instance, user_id="ben", group_room_id=TEAM_ROOM),
                AccessContext(instance, channel_thread_key=SLACK_THREAD, channel_type="slack")]
    return [[str(hit.memory_id) for hit in search_memories(conn, settings, ctx, query,
                                                           embedder=embedder, stamp=False)]
            for ctx in contexts for query in QUERIES]


def _export(conn, path: Path, **kwargs) -> None:
    with open(path, "w", encoding="utf-8") as out:
        export_instance(conn, out, INSTANCE, **kwargs)


def test_round_trip_into_a_fresh_database(database_url, second_database, tmp_path):
    source_settings = _settings(database_url, tmp_path / "a")
    target_settings = _settings(second_database, tmp_path / "b")
    exported = tmp_path / "export.jsonl"
    with _connect(database_url) as src, _connect(second_database) as dst:
        _populate(src, source_settings)
        _export(src, exported)
        before = _counts(src, INSTANCE)
        assert before["agent_knowledge_entities"] and before["agent_context_messages"]
        assert before["agent_memory_assertion_reviews"] and before["agent_user_preferences"]

        # no vectors in the file: keyword-only rows, re-embedded with the configured model
        first = import_export(dst, str(exported), instance=INSTANCE,
                              embedder=get_provider(target_settings), trust_file_states=True)
        assert not first.rejected, first.rejected[:5]
        assert first.committed and first.verified and first.links_set > 0
        assert not first.refused, first.refused     # a whole instance into an empty one
        convert(dst, target_settings, INSTANCE, embedder=get_provider(target_settings))
        assert _counts(dst, INSTANCE) == before
        history = "SELECT count(*) FROM agent_memory_assertion_history WHERE instance_key = %s"
        assert dst.execute(history, (INSTANCE,)).fetchone()[0] >= \
            src.execute(history, (INSTANCE,)).fetchone()[0]
        expected = _searches(src, source_settings, INSTANCE)
        assert sum(1 for hits in expected if hits) >= 20     # the comparison is not vacuous
        assert _searches(dst, target_settings, INSTANCE) == expected

        # the same file again adds nothing
        reread = import_export(dst, str(exported), instance=INSTANCE, trust_file_states=True)
        assert reread.total_added == 0 and reread.links_set == 0 and not reread.rejected
        assert _counts(dst, INSTANCE) == before

        # with vectors of the same model, into another instance: kept, nothing to re-embed
        with_vectors = tmp_path / "vectors.jsonl"
        _export(src, with_vectors, with_embeddings=True)
        moved = import_export(dst, str(with_vectors), instance="port-copy",
                              embedder=get_provider(target_settings), trust_file_states=True)
        assert not moved.rejected and moved.vectors_kept > 0 and moved.vectors_dropped == 0
        assert dst.execute("SELECT count(*) FROM agent_memory_chunks WHERE instance_key ="
                           " 'port-copy' AND embedding IS NULL").fetchone()[0] == 0
        team = dst.execute("SELECT DISTINCT audience_key FROM agent_memories WHERE"
                           " instance_key = 'port-copy' AND visibility_scope IN"
                           " ('team', 'workspace')").fetchall()
        assert team == [("port-copy",)]     # team audiences are keyed by the new instance
        renamed = Rewriter(INSTANCE, "port-copy").id     # ids under another instance
        assert _searches(dst, target_settings, "port-copy") == [
            [renamed(m) for m in hits] for hits in expected]
    _validate(exported)
    _validate(with_vectors)


def _validate(path: Path) -> None:
    """Every line follows docs/export-format.schema.json."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((DOCS / "export-format.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for line in path.read_text(encoding="utf-8").splitlines():
        validator.validate(json.loads(line))


def test_audience_rewrite(database_url, tmp_path):
    settings = _settings(database_url, tmp_path)
    with _connect(database_url) as conn:
        _populate(conn, settings)
        path = tmp_path / "dora.jsonl"
        _export(conn, path, audience=("private", "dora"))
        lines = path.read_text().splitlines()
        assert json.loads(lines[0])["audience"] == {"kind": "private", "key": "dora"}
        kinds = {json.loads(line)["kind"] for line in lines}
        assert {"memory", "source", "session_item", "user_preference"} <= kinds
        mapping = parse_map(["private:dora=private:erin"])

        done = import_export(conn, str(path), instance="port-erin", audiences=mapping,
                             batch_size=5, trust_file_states=True)
        assert done.committed and not done.rejected, done.rejected
        owners = conn.execute(
            "SELECT DISTINCT visibility_scope, audience_key, user_id FROM agent_memories"
            " WHERE instance_key = 'port-erin'").fetchall()
        assert owners == [("private", "erin", "erin")]
        assert conn.execute("SELECT count(*) FROM agent_context_messages WHERE instance_key ="
                            " 'port-erin' AND user_id = 'erin'").fetchone()[0] == 2
        original = conn.execute("SELECT count(*) FROM agent_memories WHERE instance_key = %s"
                                " AND audience_key = 'dora'", (INSTANCE,)).fetchone()[0]
        assert conn.execute("SELECT count(*) FROM agent_memories WHERE instance_key ="
                            " 'port-erin'").fetchone()[0] == original

    # the guards of a write
    with pytest.raises(InvalidInput):
        Rewriter("a", "b", parse_map(["team=channel:C1"]))
    with pytest.raises(InvalidInput):
        Rewriter("a", "b", parse_map(["private:x=team:elsewhere"]))
    with pytest.raises(InvalidInput):
        parse_map(["private:x=private"])
    kind = next(k for k in KINDS if k.name == "memory")
    with pytest.raises(InvalidInput):
        Rewriter("a", "b").row(kind, {"content": "api key sk-proj-" + "Ab3dEf9hIj" * 4,
                                      "visibility_scope": "team", "audience_key": "a"})


def test_import_refuses_a_foreign_file(tmp_path, conn):
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"kind": "header", "format": "other", "version": 1}) + "\n")
    with pytest.raises(InvalidInput):
        import_export(conn, str(path), instance="x")
    path.write_text(json.dumps({"kind": "header", "format": "memory-platform-export",
                                "version": 99, "instance_key": "x"}) + "\n")
    with pytest.raises(InvalidInput, match="newer"):
        import_export(conn, str(path), instance="x")
    with pytest.raises(InvalidInput, match="target instance"):
        import_export(conn, str(path), instance="")


def test_mem0_migration(conn, settings, tmp_path):
    settings = hash_embedding_settings(settings.database_url, data_dir=tmp_path / "state")
    embedder = get_provider(settings)

    def run():
        return import_memories(conn, settings, context_from_row("port-mem0"),
                               bulk_rows(read_mem0(str(FIXTURE))), embedder=embedder,
                               rebuild_index=False)

    stats = run()
    assert stats.accepted == 4 and [r.line for r in stats.rejected] == [5]
    rows = conn.execute(
        "SELECT m.content, m.visibility_scope, m.audience_key, m.subject_refs, m.metadata,"
        " m.occurred_at, a.origin, a.status, a.review_state, s.trust_class"
        " FROM agent_memories m JOIN agent_memory_sources s ON s.id = m.source_id"
        " LEFT JOIN agent_memory_assertions a ON a.id = m.assertion_id"
        " WHERE m.instance_key = 'port-mem0' ORDER BY m.occurred_at").fetchall()
    by_text = {r[0]: r for r in rows}
    food = by_text["Prefers vegetarian food and avoids dairy"]
    assert food[1:3] == ("private", "alex")
    assert food[4]["mem0"]["id"] == "3c90c3cc-0d44-4b50-8888-8dd25736052a"
    assert food[4]["mem0"]["categories"] == ["food", "health"]
    assert food[4]["mem0"]["metadata"] == {"source": "onboarding chat"}
    assert food[5].isoformat() == "2024-07-20T08:30:00.123456+00:00"
    assert food[9] == "imported"
    trip = by_text["Is planning a trip to Lisbon in October"]
    assert trip[3] == {"agent": "travel-assistant"}
    assert trip[4]["mem0"]["run_id"] == "trip-planning-42"
    support = by_text["Answer support tickets in the customer's language"]
    assert support[1:3] == ("workspace", "port-mem0")
    # imported facts follow the write-path policy (docs/policy.md row 1): they wait for review
    assert [(r[7], r[8]) for r in rows] == [("candidate", "pending")] * 4
    again = run()
    assert again.accepted == 0 and again.deduplicated == 4
    assert conn.execute("SELECT count(*) FROM agent_memories WHERE instance_key ="
                        " 'port-mem0'").fetchone()[0] == 4


def test_export_streams_a_header_and_footer(conn):
    out = io.StringIO()
    stats = export_instance(conn, out, "port-empty")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines[0]["kind"] == "header" and lines[0]["version"] == 1
    assert lines[-1] == {"kind": "footer", "counts": stats.counts, "links": 0, "lines": 2,
                         "sha256": hashlib.sha256(out.getvalue().splitlines(True)[0].encode()
                                                  ).hexdigest()}


def test_cli_export_and_imports(database_url, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from memory_platform.cli import main
    from memory_platform.foundation.settings import get_settings

    monkeypatch.setenv("MEMORY_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_EMBEDDING_PROVIDER", "hash")
    monkeypatch.setenv("MEMORY_DATA_DIR", str(tmp_path / "state"))
    path = tmp_path / "cli.jsonl"
    get_settings.cache_clear()
    try:
        mem0 = CliRunner().invoke(main, ["import", str(FIXTURE), "--format", "mem0",
                                         "--instance", "port-cli"])
        assert mem0.exit_code == 1 and "4 accepted" in mem0.stdout, mem0.output
        assert "line 5: " in mem0.stdout          # the memory without text
        out = CliRunner().invoke(main, ["export", str(path), "--instance", "port-cli",
                                        "--audience", "private:alex"])
        assert out.exit_code == 0 and "memory 2" in out.output, out.output
        moved = CliRunner().invoke(main, ["import", str(path), "--format", "memory-platform",
                                          "--instance", "port-cli2", "--audience-map",
                                          "private:alex=private:sam"])
        assert moved.exit_code == 0 and "memory: 2" in moved.stdout, moved.output
        again = CliRunner().invoke(main, ["import", str(path), "--format", "memory-platform",
                                          "--instance", "port-cli2", "--audience-map",
                                          "private:alex=private:sam"])
        assert again.exit_code == 0 and "added 0" in again.stdout, again.output
        bad = CliRunner().invoke(main, ["import", str(path), "--format", "memory-platform",
                                        "--instance", "port-cli2",
                                        "--audience-map", "team=channel:x"])
        assert bad.exit_code == 1 and "channel" in bad.output
    finally:
        get_settings.cache_clear()
