"""Erasure leaves nothing (issue 28, finding 3): a unique marker enters through every path a
person's data takes, the daily chain runs over it, the person is erased through the API, and
then every text, varchar and jsonb column of every table of the platform database is
scanned (tests/support/scan.py) for the marker and for the person's user id: zero hits,
while the other person's marked data is all there and still found by search.

Paths planted for Erin: explicit writes in each audience (private, team, workspace,
channel), her own session (shared facts, flush, compaction summaries), her turns in Bob's
session (the shared-fact pass attributes them to her, their author; before, they were
stored as Bob's and his profile quoted them), Dreams of the team, channel and workspace
(extractive model) and the chain after them (graph, consolidation, profiles, retention, run
by the chain's own step functions), a review decision with a note, a wiki-draft decision,
and the events all of these wrote. Bob plants the same through his own paths with his own
marker.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector
from starlette.testclient import TestClient

from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.projection.outbox import process_outbox_until_idle
from memory_platform.features.sessions.maintenance import run_due_sessions
from memory_platform.foundation.settings import Settings
from memory_platform.orchestration.chain_step import profiles_step, retention_step
from memory_platform.orchestration.consolidation_step import consolidation_step
from memory_platform.orchestration.graph_step import graph_step
from tests.api.conftest import (
    ALL_SCOPES,
    READ,
    REVIEW,
    WRITE,
    add_member,
    bearer,
    make_settings,
)
from tests.support.scan import find_text

INSTANCE = "default"
ERIN, BOB = "erin-q7x2", "bob-w3z9"
MARK = "quokkaberry"          # only Erin's words hold it
BOB_MARK = "wombatfig"        # only Bob's
CHANNEL = "slack:C-ops-q7"
ERIN_SESSION, BOB_SESSION, BOB_NOTES = "web:erin-chat", "web:bob-chat", "web:bob-notes"
PARTITIONS = [Partition(INSTANCE, "team", INSTANCE), Partition(INSTANCE, "workspace", INSTANCE),
              Partition(INSTANCE, "channel", CHANNEL)]
DAGSTER_RUNS = {p.kind: f"dagster-run-{p.kind}-0001" for p in PARTITIONS}


@pytest.fixture
def api_settings(database_url: str, tmp_path: Path) -> Settings:
    """Offline models; maintenance thresholds low enough that one short session is flushed
    and compacted; a Dream needs one input."""
    return make_settings(database_url, tmp_path / "state", maintenance_default_model="extractive",
                         maintenance_model=None, dream_min_inputs=1,
                         session_compaction_transcript_bytes=1,
                         session_compaction_min_new_turns=1, session_compaction_recent_turns=0,
                         session_flush_transcript_bytes=1, session_flush_min_new_turns=1)


@pytest.fixture
def conn(database_url: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(database_url, autocommit=True) as connection:
        register_vector(connection)
        yield connection


def _ok(answer, status: int = 200) -> Any:
    assert answer.status_code == status, answer.text
    return answer.json()


def _write(client: TestClient, key: dict, content: str, **body: Any) -> dict:
    return _ok(client.post("/api/v1/memory", json={"content": content, **body}, headers=key),
               201)


def _turns(client: TestClient, runtime: dict, session: str, user: str, run: str,
           items: list[tuple[str, str]]) -> None:
    """One completed run of ``session`` recorded by the runtime acting for ``user``; each
    item is (author, text)."""
    context = {"userId": user}
    _ok(client.post(f"/api/v1/sessions/{session}/items", headers=runtime, json={
        "runId": run, "context": context,
        "items": [{"role": "user", "content": text, "authorUserId": author}
                  for author, text in items]}), 201)
    _ok(client.post(f"/api/v1/sessions/{session}/runs/{run}/complete", headers=runtime,
                    json={"context": context}))


def _plant(client: TestClient, conn: psycopg.Connection, settings: Settings,
           keys: dict[str, dict], database_url: str) -> None:
    erin, bob, runtime = keys["erin"], keys["bob"], keys["runtime"]
    add_member(database_url, CHANNEL, ERIN, BOB)
    channel = {"context": {"channelThreadKey": CHANNEL, "channelType": "slack"},
               "visibility": "channel"}
    # explicit writes in each audience, with Dreaming's cue words
    _write(client, erin, f"Erin keeps the {MARK} ledger in the blue folder.",
           visibility="private")
    for text in (f"Erin decided that the {MARK} release ships on the first Monday.",
                 f"The {MARK} team must always run the smoke tests before a release.",
                 "The Nord office closes at six on Fridays."):
        _write(client, erin, text, visibility="team")
    workspace = _write(client, erin, f"The {MARK} wiki always lives in the handbook "
                       "repository.", visibility="workspace")
    if workspace["assertionStatus"] != "active":     # a workspace fact waits for review
        _ok(client.post(f"/api/v1/review/assertions/{workspace['assertionId']}/decision",
                        headers=bob, json={"decision": "approve"}))
    _write(client, erin, f"We decided the {MARK} alerts go to the ops channel.", **channel)
    # Bob's own, the same ways
    _write(client, bob, f"Bob keeps the {BOB_MARK} receipts in the red folder.",
           visibility="private")
    _write(client, bob, f"Bob decided that the {BOB_MARK} budget is approved for May.",
           visibility="team")
    _write(client, bob, f"We decided the {BOB_MARK} pager rotates weekly.", **channel)
    # sessions: hers, and her turns in his
    _turns(client, runtime, ERIN_SESSION, ERIN, "run-e1", [
        (ERIN, f"Remember that my {MARK} appointment is always on the first Monday.")])
    _turns(client, runtime, ERIN_SESSION, ERIN, "run-e2", [
        (ERIN, f"I prefer the {MARK} reports as PDF files.")])
    _turns(client, runtime, BOB_SESSION, BOB, "run-b1", [
        (BOB, f"I prefer the {BOB_MARK} reports on paper."),
        (ERIN, f"Erin decided that the {MARK} budget doubles in May.")])
    _turns(client, runtime, BOB_NOTES, BOB, "run-b2", [
        (BOB, f"Remember that the {BOB_MARK} review is always on Thursday.")])
    for _ in range(10):
        if not run_due_sessions(conn, settings).passes:
            break
    process_outbox_until_idle(conn, settings)
    # the daily chain over each shared audience
    for partition in PARTITIONS:
        result = run_dream_partition(conn, settings, partition, model="extractive",
                                     orchestrator_run_id=DAGSTER_RUNS[partition.kind])
        assert result.status in ("completed", "skipped"), (partition, result.diagnostics)
        key = partition.partition_key
        graph_step(conn, settings, key)
        consolidation_step(conn, settings, key)
        profiles_step(conn, settings, key)
        retention_step(conn, settings, key)
    process_outbox_until_idle(conn, settings)


def _review(client: TestClient, keys: dict[str, dict]) -> str:
    """Erin decides: an assertion of Bob's (with a note in her words) and a wiki draft;
    answers the id of the assertion she approved."""
    queue = _ok(client.get("/api/v1/review/queue", params={"audience": "team"},
                           headers=keys["erin"]))["items"]
    bobs = [i for i in queue if "review is always on Thursday" in i["text"]]
    assert bobs, queue
    _ok(client.post(f"/api/v1/review/assertions/{bobs[0]['id']}/decision",
                    headers=keys["erin"],
                    json={"decision": "approve", "note": f"Checked against my {MARK} notes."}))
    drafts = _ok(client.get("/api/v1/review/queue", params={"kind": "wiki_draft"},
                            headers=keys["erin"]))["items"]
    assert drafts
    _ok(client.post(f"/api/v1/review/wiki/{drafts[0]['id']}/decision", headers=keys["erin"],
                    json={"decision": "reject", "reason": f"The {MARK} page is enough."}))
    return bobs[0]["id"]


# Where the planted marker must be before the erasure (so that a path that stopped planting
# fails the test instead of passing it): (table, column) pairs of the scan.
PLANTED = {("agent_memories", "content"), ("agent_memory_sources", "content"),
           ("agent_memory_assertions", "assertion_text"),
           ("agent_memory_assertion_evidence", "excerpt"),
           ("agent_context_messages", "content"), ("agent_context_summaries", "content"),
           ("agent_knowledge_claims", "assertion_text"), ("agent_knowledge_evidence", "excerpt"),
           ("agent_memory_dreams", "stats_json"), ("agent_memory_dreams", "proposals_json"),
           ("agent_memory_assertion_reviews", "note"), ("wiki_change_proposals", "body_markdown"),
           ("wiki_change_proposals", "decision_reason"), ("agent_user_profiles", "profile_text")}
# Bob's own rows (his writes, his turns, what was drawn from his turns alone) must all stay:
# a compaction summary of his session that covered one of Erin's turns goes (derived from
# her words), and with it what a Dream drew from that summary.
BOBS = {
    "agent_context_messages": "SELECT count(*) FROM agent_context_messages WHERE content LIKE %s",
    "agent_memories": "SELECT count(*) FROM agent_memories WHERE content LIKE %s"
                      " AND source_type <> 'summary' AND dream_id IS NULL",
    "agent_memory_assertions": "SELECT count(*) FROM agent_memory_assertions"
                               " WHERE assertion_text LIKE %s AND origin <> 'dream'",
}


def _bobs_rows(conn: psycopg.Connection) -> dict[str, int]:
    return {table: conn.execute(query, (f"%{BOB_MARK}%",)).fetchone()[0]
            for table, query in BOBS.items()}


def _assembly_messages(conn: psycopg.Connection, session: str, author: str) -> list[str]:
    """The raw turns of ``author`` that ``session``'s assembly holds, directly or under a
    summary, in order."""
    return [r[0] for r in conn.execute(
        """SELECT m.content FROM agent_context_items i
             JOIN agent_context_messages m
               ON m.id = i.message_id
               OR m.id IN (SELECT message_id FROM agent_context_summary_messages
                            WHERE summary_id = i.summary_id)
            WHERE i.session_key = %s AND m.user_id = %s ORDER BY i.position, m.seq""",
        (session, author)).fetchall()]


def test_an_erased_person_is_in_no_column_of_any_table(client, conn, api_settings, make_key,
                                                       database_url):
    keys = {"erin": bearer(make_key(ERIN, (READ, WRITE, REVIEW))),
            "bob": bearer(make_key(BOB, (READ, WRITE, REVIEW))),
            "admin": bearer(make_key("root", ALL_SCOPES)),
            "runtime": bearer(make_key(None, (READ, WRITE), runtime=True))}
    _plant(client, conn, api_settings, keys, database_url)
    approved = _review(client, keys)
    planted = {(t, c) for t, c, _ in find_text(conn, MARK)}
    assert PLANTED <= planted, PLANTED - planted
    assert {("agent_memory_events", "owner_user_id"), ("agent_knowledge_entities", "label"),
            ("agent_memory_assertion_reviews", "reviewer_id")} <= {
        (t, c) for t, c, _ in find_text(conn, ERIN)}
    # what the shared-fact pass drew from her turn in Bob's session is hers (its author's)
    assert conn.execute(
        "SELECT m.user_id FROM agent_memories m JOIN agent_context_messages c"
        "  ON c.id::text = m.metadata ->> 'sourceMessageId'"
        " WHERE c.session_key = %s AND c.user_id = %s AND m.source_type = 'fact'",
        (BOB_SESSION, ERIN)).fetchall() == [(ERIN,)]
    bobs_rows = _bobs_rows(conn)
    assert all(bobs_rows.values()), bobs_rows
    bobs_turns = _assembly_messages(conn, BOB_SESSION, BOB)

    report = _ok(client.post("/internal/memory/users/erase", json={"userId": ERIN},
                             headers=keys["admin"]))

    assert find_text(conn, MARK) == []
    assert find_text(conn, ERIN) == []
    # the report says what was done, content-free: counts, the Dreams redacted, their runs
    assert MARK not in str(report) and ERIN not in str(report)
    assert report["updated"]["agent_memory_dreams.redacted"] == 3
    assert sorted(report["dagsterRunIds"]) == sorted(DAGSTER_RUNS.values())
    assert len(report["dreamIds"]) == 3
    assert report["updated"]["agent_memory_assertion_reviews.reviewer_id.pseudonymised"] == 1
    assert report["removed"]["wiki_change_proposals"] >= 1
    # Bob's data all stays, and is found
    assert _bobs_rows(conn) == bobs_rows
    # his session's summary covered her turn: it went, and his turns stand in its place
    assert bobs_turns and _assembly_messages(conn, BOB_SESSION, BOB) == bobs_turns
    found = _ok(client.get("/api/v1/memory", params={"query": BOB_MARK},
                           headers=keys["bob"]))["results"]
    assert any(BOB_MARK in r["content"] for r in found)
    found = _ok(client.post("/api/v1/context/search", json={"query": BOB_MARK},
                            headers=keys["bob"]))["results"]
    assert any(BOB_MARK in r["content"] for r in found)
    assert _ok(client.get("/api/v1/sessions/grep", params={
        "pattern": BOB_MARK, "allSessions": "true"}, headers=keys["bob"]))["results"]
    # his stored profile listed what went: it was re-derived from what stays
    assert report["updated"]["agent_user_profiles.rederived"] == 1
    (profile,) = conn.execute("SELECT profile_text FROM agent_user_profiles"
                              " WHERE user_id = %s", (BOB,)).fetchone()
    assert BOB_MARK in profile
    # her decision about his fact stays, by a pseudonymous reviewer, without her note
    assert conn.execute(
        "SELECT a.review_state, r.reviewer_kind, r.reviewer_id LIKE 'erased:%%', r.note"
        "  FROM agent_memory_assertions a JOIN agent_memory_assertion_reviews r"
        "    ON r.assertion_id = a.id AND r.decision = 'approve'"
        " WHERE a.id = %s", (approved,)).fetchall() == [("human_approved", "human", True, None)]
