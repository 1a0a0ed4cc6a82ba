"""The graph worker end to end against the real database: ledger triggers enqueue graph jobs,
a pass extracts (offline model, or a scripted provider over real HTTP), audiences never share
a provider request, a second build adds nothing, revocation retracts, failures stay
retryable, and a Dream's graph carries Dream evidence that a rebuild replaces."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from psycopg import sql

from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.graph.build import build_dream_graph, process_graph_jobs
from memory_platform.features.graph.model import GraphModel
from memory_platform.features.projection.outbox import GRAPH_PROJECTION, enqueue, process_outbox
from memory_platform.features.retrieval.feedback.events import record_visible_injection
from memory_platform.shared.access import AccessContext
from memory_platform.shared.ledger.assertions import record_decision
from memory_platform.shared.llm.selection import OFFLINE_MODEL, http_model_client
from tests.dreaming.support import TEAM_SESSIONS, remember

OFFLINE = GraphModel(OFFLINE_MODEL, "explicit", None)
GRAPH_TABLES = ("agent_knowledge_entities", "agent_knowledge_claims", "agent_knowledge_edges",
                "agent_knowledge_evidence")


def graph_jobs(db, instance: str, status: str | None = None) -> list[dict]:
    rows = db.execute(
        "SELECT subject_id, status, payload, last_error FROM agent_memory_ingestion_outbox"
        " WHERE instance_key = %s AND job_type = %s AND (%s::text IS NULL OR status = %s)"
        " ORDER BY id", (instance, GRAPH_PROJECTION, status, status)).fetchall()
    return [{"subject": r[0], "status": r[1], "payload": r[2], "error": r[3]} for r in rows]


def counts(db, instance: str) -> dict[str, int]:
    query = sql.SQL("SELECT count(*) FROM {} WHERE instance_key = %s")
    return {t: db.execute(query.format(sql.Identifier(t)), (instance,)).fetchone()[0]
            for t in GRAPH_TABLES}


def fact(db, settings, instance: str, text: str, *, user: str = "ada",
         visibility: str = "team", channel: str | None = None, refs=None):
    ctx = AccessContext(instance, user_id=user, channel_thread_key=channel)
    return remember(db, settings, ctx, text, source_type="fact", visibility=visibility,
                    subject_refs=refs or {})


def test_an_approved_fact_enqueues_one_graph_job_and_feedback_enqueues_none(db, settings,
                                                                              instance):
    stored = fact(db, settings, instance, "Mandant Nordwind uses Keycloak for single sign-on.")
    (job,) = graph_jobs(db, instance)
    assert job["subject"] == stored.assertion_id and job["status"] == "pending"
    assert job["payload"] == {"audienceKind": "team", "audienceKey": instance}

    record_visible_injection(db, AccessContext(instance, user_id="ada"), [stored.assertion_id],
                             run_id=f"run-{uuid.uuid4().hex[:8]}")
    assert len(graph_jobs(db, instance)) == 1          # counters never fire the trigger

    with db.transaction():
        record_decision(db, instance_key=instance, assertion_id=stored.assertion_id,
                        decision="revoke", reviewer_kind="human", reviewer_id="lead",
                        reason_code="wrong")
    assert len(graph_jobs(db, instance)) == 2          # a state change is one more job


def test_a_pass_builds_the_graph_and_a_second_build_adds_no_duplicates(db, settings, instance):
    fact(db, settings, instance, "Anna Berger is the account manager of Helios Energy.",
         refs={"mandantId": "m-helios"})
    fact(db, settings, instance, "Helios Energy prefers Grafana reports every Monday.",
         refs={"mandantId": "m-helios"})

    build = process_graph_jobs(db, settings, instance_key=instance, model=OFFLINE)

    assert build.jobs == 2 and build.batches == 1 and not build.failures
    assert build.changes.claims_added >= 2 and build.changes.evidence_added > 0
    assert all(j["status"] == "done" for j in graph_jobs(db, instance))
    labels = {r[0] for r in db.execute(
        "SELECT label FROM agent_knowledge_entities WHERE instance_key = %s", (instance,))}
    assert any("Helios Energy" in label for label in labels)
    before = counts(db, instance)

    for assertion_id, in db.execute("SELECT id FROM agent_memory_assertions"
                                    " WHERE instance_key = %s", (instance,)).fetchall():
        enqueue(db, instance, GRAPH_PROJECTION, assertion_id, f"again:{assertion_id}",
                {"audienceKind": "team", "audienceKey": instance})
    again = process_graph_jobs(db, settings, instance_key=instance, model=OFFLINE)

    assert again.jobs == 2 and not again.failures
    assert again.changes.claims_added == 0 and again.changes.entities_added == 0
    assert counts(db, instance) == before


def test_audiences_never_share_a_provider_request(db, settings, instance, openai_server):
    fact(db, settings, instance, "Anna Berger owns the Atlas Insurance renewal.",
         visibility="private")
    fact(db, settings, instance, "Atlas Insurance uses DATEV for payroll exports.")
    fact(db, settings, instance, "The Kranich Pharma channel reviews GitLab merges daily.",
         visibility="channel", channel="thread-kranich")
    fact(db, settings, instance, "Bob Carter prefers Slack for Atlas Insurance alerts.",
         user="bob", visibility="private")
    audience_of = {str(m): (k, key) for m, k, key in db.execute(
        "SELECT id, visibility_scope, audience_key FROM agent_memories"
        " WHERE instance_key = %s", (instance,)).fetchall()}
    empty = json.dumps({"schemaVersion": 1, "entities": [], "claims": [], "edges": []})
    openai_server.script_chat(content=empty, model="graph-model", times=10)
    model = GraphModel("graph-model", "explicit",
                       http_model_client(settings.model_copy(update={
                           "maintenance_base_url": openai_server.base_url}),
                           "graph-model", offline_name=OFFLINE_MODEL))

    build = process_graph_jobs(db, settings, instance_key=instance, model=model)

    assert not build.failures and build.batches == 4
    requests = openai_server.requests("chat/completions")
    assert len(requests) == 4
    for request in requests:
        text = json.dumps(json.loads(request.body))
        cited = set(re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                               text))
        audiences = {audience_of[m] for m in cited if m in audience_of}
        assert len(audiences) == 1, audiences


def test_revocation_retracts_refs_and_quarantines_orphans(db, settings, instance):
    keep = fact(db, settings, instance, "Sierra Foods uses Jira for the bakery roadmap.")
    gone = fact(db, settings, instance, "Lumen Studios prefers Grafana dashboards daily.")
    process_graph_jobs(db, settings, instance_key=instance, model=OFFLINE)

    with db.transaction():
        record_decision(db, instance_key=instance, assertion_id=gone.assertion_id,
                        decision="revoke", reviewer_kind="human", reviewer_id="lead",
                        reason_code="wrong")
    build = process_graph_jobs(db, settings, instance_key=instance, model=OFFLINE)

    assert build.retracted_assertions == 1
    active = db.execute(
        "SELECT assertion_text FROM agent_knowledge_claims WHERE instance_key = %s"
        " AND status = 'active'", (instance,)).fetchall()
    assert [r[0] for r in active] == ["Sierra Foods uses Jira for the bakery roadmap."]
    refs = db.execute("SELECT source_refs::text FROM agent_knowledge_claims"
                      " WHERE instance_key = %s AND status = 'active'", (instance,)).fetchall()
    assert str(gone.assertion_id) not in "".join(r[0] for r in refs)
    lumen = db.execute(
        "SELECT status FROM agent_knowledge_entities WHERE instance_key = %s"
        " AND label LIKE '%%Lumen%%'", (instance,)).fetchall()
    assert lumen and {r[0] for r in lumen} == {"quarantined"}
    assert keep.assertion_id


def test_a_malformed_answer_keeps_the_jobs_retryable_and_writes_nothing(db, settings, instance,
                                                                       openai_server):
    fact(db, settings, instance, "Blue Harbor Bank uses SAP for quarterly closing.")
    openai_server.script_chat(content='{"schemaVersion": 1, "entities": [', model="graph-model")
    model = GraphModel("graph-model", "explicit",
                       http_model_client(settings.model_copy(update={
                           "maintenance_base_url": openai_server.base_url}),
                           "graph-model", offline_name=OFFLINE_MODEL))
    quick = settings.model_copy(update={"outbox_retry_backoff_seconds": 0.0})

    build = process_graph_jobs(db, quick, instance_key=instance, model=model)

    assert build.failures and build.failures[0].code == "malformed_output"
    (job,) = graph_jobs(db, instance)
    assert job["status"] == "failed" and job["error"].startswith("malformed_output")
    assert counts(db, instance)["agent_knowledge_claims"] == 0

    retried = process_graph_jobs(db, quick, instance_key=instance, model=OFFLINE)
    assert retried.jobs == 1 and not retried.failures
    assert graph_jobs(db, instance)[0]["status"] == "done"


def test_an_unreachable_model_keeps_the_work_queued(db, settings, instance):
    fact(db, settings, instance, "Acme Robotics uses GitLab for firmware releases.")
    unreachable = settings.model_copy(update={"graph_model": "gpt-none",
                                              "maintenance_base_url": None,
                                              "openai_base_url": None, "openai_api_key": None,
                                              "maintenance_api_key": None})

    build = process_graph_jobs(db, unreachable, instance_key=instance)

    assert build.failures and build.failures[0].code == "model_unavailable"
    assert graph_jobs(db, instance)[0]["status"] == "failed"
    assert counts(db, instance)["agent_knowledge_claims"] == 0


@pytest.fixture
def dreamed(db, settings, instance):
    """A team partition dreamed with the extractive model, its projections written."""
    for session, texts in TEAM_SESSIONS.items():
        for text in texts:
            remember(db, settings, AccessContext(instance, user_id="ada", session_key=session),
                     text, visibility="team")
    partition = Partition(instance, "team", instance)
    result = run_dream_partition(db, settings, partition, model=OFFLINE_MODEL)
    assert result.status in ("completed", "partial"), result.diagnostics
    process_outbox(db, settings)
    return result


def test_a_dreams_graph_has_dream_evidence_and_a_rebuild_replaces_only_its_refs(
        db, settings, instance, dreamed):
    build = build_dream_graph(db, settings, dreamed.dream_id, model=OFFLINE)

    assert build.changes.claims_added > 0 and not build.failures
    dream = str(dreamed.dream_id)
    evidence = db.execute(
        "SELECT count(*) FROM agent_knowledge_evidence WHERE instance_key = %s"
        " AND evidence_kind = 'dream' AND dream_id = %s", (instance, dreamed.dream_id)
    ).fetchone()[0]
    assert evidence > 0
    refs = [r[0] for r in db.execute(
        "SELECT source_refs FROM agent_knowledge_claims WHERE instance_key = %s"
        " AND status = 'active'", (instance,))]
    assert all({"dreamId": dream} in r for r in refs)
    assert all(any("assertionId" in ref for ref in r) for r in refs)
    stats = db.execute("SELECT stats_json -> 'graph' FROM agent_memory_dreams WHERE id = %s",
                       (dreamed.dream_id,)).fetchone()[0]
    assert stats["claimsAdded"] == build.changes.claims_added
    before = counts(db, instance)

    rebuilt = build_dream_graph(db, settings, dreamed.dream_id, rebuild=True, model=OFFLINE)

    assert rebuilt.changes.refs_removed > 0 and rebuilt.changes.claims_added == 0
    assert counts(db, instance) == before
    active = db.execute("SELECT count(*) FROM agent_knowledge_claims WHERE instance_key = %s"
                        " AND status = 'active'", (instance,)).fetchone()[0]
    assert active == len(refs)


def test_another_instance_is_never_touched(db, settings, instance):
    other = f"other-{uuid.uuid4().hex[:8]}"
    fact(db, settings, instance, "Nordwind Logistik uses PostgreSQL for routing data.")
    fact(db, settings, other, "Nordwind Logistik uses PostgreSQL for routing data.")

    process_graph_jobs(db, settings, instance_key=instance, model=OFFLINE)

    assert counts(db, other)["agent_knowledge_claims"] == 0
    assert graph_jobs(db, other)[0]["status"] == "pending"
