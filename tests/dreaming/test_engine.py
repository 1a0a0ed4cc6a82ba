"""run_dream_partition end to end: the extractive model over seeded sessions, the ledger,
the safety pass, the outbox and recall; idempotent re-runs; the lock; stale rows; dry runs."""

from __future__ import annotations

import threading

import psycopg
import pytest
from psycopg.rows import dict_row

from memory_platform.features.context import context_search
from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.lock import dream_lock
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.runs import list_dreams, reconcile_stale_dreams
from memory_platform.foundation.errors import DreamLocked
from memory_platform.shared.access import AccessContext
from memory_platform.shared.llm.base import ModelError
from tests.dreaming.support import (
    HUMAN_FACT,
    TEAM_SESSIONS,
    ScriptedModel,
    assertion,
    counts,
    payload,
    remember,
)


def seed_team(db, settings, instance):
    ids = {}
    for session, texts in TEAM_SESSIONS.items():
        ctx = AccessContext(instance, user_id="ada", session_key=session)
        for text in texts:
            ids[text] = remember(db, settings, ctx, text, visibility="team").id
    fact = remember(db, settings, AccessContext(instance, user_id="bob"), HUMAN_FACT,
                    source_type="fact", visibility="team")
    ids[HUMAN_FACT] = fact.id
    return ids


def team(instance):
    return Partition(instance, "team", instance)


def dream_row(db, dream_id):
    with db.cursor(row_factory=dict_row) as cur:
        return cur.execute("SELECT * FROM agent_memory_dreams WHERE id = %s",
                           (dream_id,)).fetchone()


# --- end to end ----------------------------------------------------------------------------


def test_extractive_dream_activates_cited_assertions_that_recall_finds(db, settings, instance):
    seed_team(db, settings, instance)

    result = run_dream_partition(db, settings, team(instance), model="extractive")

    assert result.status == "completed", result.diagnostics
    row = dream_row(db, result.dream_id)
    assert row["status"] == "completed" and row["model"] == "extractive"
    stats = row["stats_json"]
    assert stats["inputs"]["activity"] == 4 and stats["inputs"]["direct_facts"] == 1
    # The extractive procedure waits for a person (C4, docs/policy.md): 3 activate, not 4.
    assert stats["activated"] >= 3 and stats["rejected"] == {}
    assert stats["modelSource"] == "explicit" and stats["outbox"]["failed"] == 0
    assert set(stats["durations"]) >= {"select", "generate", "validate", "promote", "outbox",
                                       "total"}
    active = db.execute(
        "SELECT a.id, a.assertion_text FROM agent_memory_assertions a"
        " WHERE a.instance_key = %s AND a.dream_id = %s AND a.status = 'active'",
        (instance, result.dream_id)).fetchall()
    assert len(active) == stats["activated"]
    for assertion_id, _text in active:
        evidence = db.execute(
            "SELECT e.excerpt, s.content FROM agent_memory_assertion_evidence e"
            " JOIN agent_memory_sources s ON s.id = e.source_id WHERE e.assertion_id = %s",
            (assertion_id,)).fetchall()
        assert evidence and all(excerpt in content for excerpt, content in evidence)
        projection = db.execute(
            "SELECT m.source_type, m.visibility_scope, m.metadata->>'memoryClass',"
            " (SELECT count(*) FROM agent_memory_chunks c WHERE c.memory_id = m.id"
            "   AND c.embedding IS NOT NULL),"
            " (SELECT count(*) FROM agent_memory_relations r WHERE r.from_memory_id = m.id"
            "   AND r.relation_type = 'derives')"
            " FROM agent_memories m WHERE m.assertion_id = %s AND m.source_id IS NULL",
            (assertion_id,)).fetchone()
        assert projection[:3] == ("dream", "team", "projection")
        assert projection[3] >= 1 and projection[4] >= 1
    assert db.execute("SELECT count(*) FROM agent_memory_assertion_embeddings e"
                      " JOIN agent_memory_assertions a ON a.id = e.assertion_id"
                      " WHERE a.dream_id = %s", (result.dream_id,)).fetchone()[0] == len(active)

    carol = AccessContext(instance, user_id="carol")
    hits = context_search(db, settings, carol, "Which database do we use for the memory ledger?")
    ledger_hit = next(h for h in hits if "PostgreSQL 18" in h.content and h.kind == "assertion")
    assert "memories" in ledger_hit.found_by  # through the projection's embedded chunk
    assert ledger_hit.details["sourceType"] == "dream"


def test_a_second_dream_creates_no_duplicates(db, settings, instance):
    seed_team(db, settings, instance)
    first = run_dream_partition(db, settings, team(instance), model="extractive")
    before = counts(db, instance)

    second = run_dream_partition(db, settings, team(instance), model="extractive")

    after = counts(db, instance)
    assert first.status == "completed" and second.status == "completed", second.diagnostics
    for table in ("agent_memory_assertions", "agent_memory_assertion_evidence",
                  "agent_memories", "agent_memory_chunks", "agent_memory_relations",
                  "agent_memory_assertion_embeddings", "agent_memory_assertion_reviews",
                  "agent_memory_ingestion_outbox", "wiki_change_proposals"):
        assert after[table] == before[table], table
    assert second.stats["created"] == 0 and second.stats["activated"] == 0


# --- fail closed ---------------------------------------------------------------------------


def _seeded(db, settings, instance):
    ids = seed_team(db, settings, instance)
    return ids, next(iter(ids.values())), next(iter(ids))


def _cases(ids, other_partition_id):
    memory_id, text = next(iter(ids.values())), next(iter(ids))
    good = assertion(text, memory_id)
    with_extra = {**good, "note": "x"}
    bad_evidence = {**good, "evidence": [{"memoryId": str(memory_id), "excerpt": text,
                                          "page": 1}]}
    return {
        "unknown_top_level_field": ({**payload(good), "comment": "done"}, "unknown_field"),
        "unknown_item_field": (payload(with_extra), "unknown_field"),
        "unknown_evidence_field": (payload(bad_evidence), "unknown_field"),
        "schema_version": (payload(good, version=2), "schema_version_mismatch"),
        "missing_wiki_list": ({"schemaVersion": 1, "assertions": [good]}, "missing_field"),
        "too_many_assertions": (payload(*[assertion(f"{text} {i}", memory_id, text)
                                          for i in range(13)]), "too_many_items"),
        "text_too_long": (payload(assertion("x" * 601, memory_id, text)), "too_long"),
        "excerpt_too_long": (payload(assertion(text, memory_id, "y" * 301)), "too_long"),
        "wrong_type": (payload({**good, "confidence": "high"}), "wrong_type"),
        "empty_object": ({}, "empty_output"),
        "not_an_object": ([good], "not_an_object"),
        "unknown_id": (payload(assertion(text, "00000000-0000-4000-8000-000000000000")),
                       "citation_outside_partition"),
        "not_an_id": (payload(assertion(text, "MEMORY_ID_1")), "invalid_memory_id"),
        "cross_audience_id": (payload(assertion(text, other_partition_id, "Private note")),
                              "citation_outside_partition"),
        "paraphrased_excerpt": (payload(assertion(text, memory_id,
                                                  text.replace("decided", "chose"))),
                                "excerpt_not_verbatim"),
        "empty_lists": (payload(), "no_valid_proposals"),
        "updates_without_grounds": (payload({**good, "relation": "updates",
                                             "confidence": 0.8}), "updates_not_allowed"),
    }


CASES = list(_cases({"We decided to use PostgreSQL.": "x"}, "y"))


@pytest.mark.parametrize("case", CASES)
def test_bad_output_fails_closed_without_any_ledger_mutation(db, settings, instance, case):
    ids = seed_team(db, settings, instance)
    private = remember(db, settings, AccessContext(instance, user_id="ada"),
                       "Private note about my salary review.", visibility="private")
    data, code = _cases(ids, private.id)[case]
    before = counts(db, instance)

    result = run_dream_partition(db, settings, team(instance), model=ScriptedModel(data))

    assert counts(db, instance) == before
    assert result.status == "skipped"
    row = dream_row(db, result.dream_id)
    assert row["status"] == "skipped" and row["finished_at"] is not None
    codes = {d["code"] for d in row["diagnostics"]}
    problems = {p["code"] for d in row["diagnostics"] for p in d.get("problems", [])}
    assert code in codes | problems, row["diagnostics"]


@pytest.mark.parametrize("code,status", [
    ("malformed_output", "skipped"), ("truncated", "skipped"), ("empty", "skipped"),
    ("timeout", "failed"), ("model_mismatch", "failed"), ("unavailable", "failed"),
])
def test_model_errors_end_the_dream_without_mutation(db, settings, instance, code, status):
    seed_team(db, settings, instance)
    before = counts(db, instance)

    result = run_dream_partition(db, settings, team(instance),
                                 model=ScriptedModel(error=ModelError(code, "scripted")))

    assert counts(db, instance) == before
    row = dream_row(db, result.dream_id)
    assert (row["status"], row["model"]) == (status, "scripted-model")
    assert row["diagnostics"][0]["code"] == code


def test_an_unresolvable_model_fails_the_row_and_calls_nothing(db, settings, instance):
    seed_team(db, settings, instance)
    before = counts(db, instance)

    result = run_dream_partition(db, settings, team(instance), model="gpt-unconfigured")

    assert result.status == "failed" and counts(db, instance) == before
    assert result.diagnostics[0]["code"] == "model_unavailable"
    assert dream_row(db, result.dream_id)["model"] == "gpt-unconfigured"


def test_a_partition_below_the_minimum_is_skipped_without_a_model_call(db, settings, instance):
    ctx = AccessContext(instance, user_id="ada", session_key="chat:ada-1")
    remember(db, settings, ctx, "We decided to use PostgreSQL 18.", visibility="team")
    model = ScriptedModel(payload())

    result = run_dream_partition(db, settings, team(instance), model=model)

    assert result.status == "skipped" and model.requests == []
    assert result.diagnostics[0]["code"] == "below_min_inputs"
    assert dream_row(db, result.dream_id)["model"] is None


def test_the_running_row_names_the_exact_model_before_generation(db, settings, instance):
    seed_team(db, settings, instance)
    seen = {}

    def script(request):
        seen["row"] = db.execute(
            "SELECT status, model, trigger_kind, dagster_run_id, partition_key"
            " FROM agent_memory_dreams WHERE instance_key = %s", (instance,)).fetchone()
        return payload()

    run_dream_partition(db, settings, team(instance), model=ScriptedModel(script=script),
                        trigger="scheduled", orchestrator_run_id="run-42")

    # Another connection sees it: the row was committed before the model was called.
    assert seen["row"] == ("running", "scripted-model", "scheduled", "run-42",
                           f"{instance}/team/{instance}")


# --- what the model sees -------------------------------------------------------------------


def test_automation_sessions_never_reach_the_model(db, settings, instance):
    ids = seed_team(db, settings, instance)
    automated = []
    for session in ("heartbeat:hourly", "GitHub:webhook-1", "cron:nightly", "system:boot"):
        ctx = AccessContext(instance, user_id="ada", session_key=session)
        for i in range(30):
            automated.append(remember(db, settings, ctx, f"Status post {session} number {i} "
                                      "says the build is green.", visibility="team").id)
    model = ScriptedModel(payload())

    result = run_dream_partition(db, settings, team(instance), model=model)

    assert model.seen_ids == {str(i) for i in ids.values()}
    assert not model.seen_ids & {str(i) for i in automated}
    assert result.stats["excludedAutomation"] == len(automated)


def test_a_private_input_never_appears_in_a_team_partition(db, settings, instance):
    ids = seed_team(db, settings, instance)
    ada = AccessContext(instance, user_id="ada", session_key="chat:ada-private")
    private = [remember(db, settings, ada, f"My private reminder number {i} about taxes.",
                        visibility="private").id for i in range(3)]
    team_model, private_model = ScriptedModel(payload()), ScriptedModel(payload())

    run_dream_partition(db, settings, team(instance), model=team_model)
    run_dream_partition(db, settings, Partition(instance, "private", "ada"),
                        model=private_model)

    assert team_model.seen_ids == {str(i) for i in ids.values()}
    assert private_model.seen_ids == {str(i) for i in private}


# --- the lock, stale rows, dry runs --------------------------------------------------------


def test_the_lock_keeps_a_concurrent_dream_out(db, settings, instance, module_database_url):
    seed_team(db, settings, instance)
    before = counts(db, instance)
    dreams = db.execute("SELECT count(*) FROM agent_memory_dreams").fetchone()[0]
    with psycopg.connect(module_database_url, autocommit=True) as other:
        with dream_lock(other):
            with pytest.raises(DreamLocked):
                run_dream_partition(db, settings, team(instance), model="extractive")
    assert counts(db, instance) == before
    assert db.execute("SELECT count(*) FROM agent_memory_dreams").fetchone()[0] == dreams


def test_two_dreams_started_together_never_overlap(db, settings, instance, module_database_url):
    seed_team(db, settings, instance)
    inside = threading.Event()
    release = threading.Event()

    def slow(request):
        inside.set()
        release.wait(10)
        return payload()

    outcome = {}

    def first():
        with psycopg.connect(module_database_url, autocommit=True) as conn:
            outcome["first"] = run_dream_partition(conn, settings, team(instance),
                                                   model=ScriptedModel(script=slow)).status

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert inside.wait(10)
        with pytest.raises(DreamLocked):
            run_dream_partition(db, settings, team(instance), model="extractive")
    finally:
        release.set()
        thread.join(10)
    assert outcome["first"] == "skipped"


def test_a_stale_running_row_is_reconciled_into_failed(db, settings, instance):
    seed_team(db, settings, instance)
    fresh = db.execute(
        "INSERT INTO agent_memory_dreams (instance_key, audience_kind, audience_key,"
        " partition_key) VALUES (%s, 'team', %s, 'p') RETURNING id",
        (instance, instance)).fetchone()[0]
    stale = db.execute(
        "INSERT INTO agent_memory_dreams (instance_key, audience_kind, audience_key,"
        " partition_key, started_at, heartbeat_at)"
        " VALUES (%s, 'team', %s, 'p', now() - interval '3 hours', now() - interval '91 min')"
        " RETURNING id", (instance, instance)).fetchone()[0]

    assert reconcile_stale_dreams(db, settings) == 1
    assert reconcile_stale_dreams(db, settings) == 0

    row = dream_row(db, stale)
    assert row["status"] == "failed" and row["finished_at"] is not None
    assert row["diagnostics"][-1]["code"] == "stale_running_dream"
    assert dream_row(db, fresh)["status"] == "running"
    db.execute("UPDATE agent_memory_dreams SET status = 'failed', finished_at = now()"
               " WHERE id = %s", (fresh,))


def test_a_dry_run_writes_only_its_dream_row(db, settings, instance):
    seed_team(db, settings, instance)
    before = counts(db, instance)

    result = run_dream_partition(db, settings, team(instance), model="extractive",
                                 dry_run=True)

    assert counts(db, instance) == before
    row = dream_row(db, result.dream_id)
    assert row["dry_run"] and row["status"] == "completed"
    proposals = row["proposals_json"]
    assert len(proposals["assertions"]) == 5 and proposals["wikiProposals"]
    decisions = {d["decision"] for d in proposals["policyPreview"]}
    # The extractive procedure waits for a person (C4, docs/policy.md): 3 activate, not 4.
    assert decisions <= {"activate", "keep", "defer"} and row["stats_json"]["wouldActivate"] == 3
    assert [d["reasonCode"] for d in proposals["policyPreview"] if d["decision"] == "defer"] \
        == ["procedure_needs_review"]


def test_list_dreams_shows_the_newest_first(db, settings, instance):
    seed_team(db, settings, instance)
    first = run_dream_partition(db, settings, team(instance), model="extractive", dry_run=True)
    second = run_dream_partition(db, settings, team(instance), model="extractive")

    rows = list_dreams(db, instance_key=instance, limit=50)

    assert [r["id"] for r in rows] == [second.dream_id, first.dream_id]
    # The extractive procedure waits for a person (C4, docs/policy.md): 3 activate, not 4.
    assert rows[0]["stats_json"]["activated"] == 3


def test_a_non_autocommit_connection_runs_and_commits_a_dream(
        db, settings, instance, module_database_url):
    from pgvector.psycopg import register_vector

    from memory_platform.features.dreaming.rollback import rollback_dream

    seed_team(db, settings, instance)
    with psycopg.connect(module_database_url) as conn:  # like a pool connection
        register_vector(conn)
        conn.commit()
        result = run_dream_partition(conn, settings, team(instance), model="extractive")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        rolled = rollback_dream(conn, result.dream_id, settings=settings)
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

    assert result.status == "completed" and len(rolled.tombstoned) == 4
    # The extractive procedure waits for a person (C4, docs/policy.md): no projection of it.
    assert dream_row(db, result.dream_id)["status"] == "rolled_back"
    assert db.execute("SELECT count(*) FROM agent_memories WHERE dream_id = %s"
                      " AND memory_state = 'archived'", (result.dream_id,)).fetchone()[0] == 3
