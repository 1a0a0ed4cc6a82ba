"""Entity merging against the real database: the deterministic pass (aliases, diacritics),
re-pointing with collisions (refs unioned), self-loops, the quarantined loser, a merge
reversed by hand from its audit rows, the refusals (partition, type, visibility, linked
records), the dry run, and the vector pass against the scripted model over real HTTP."""

from __future__ import annotations

import json
import uuid

import pytest
from psycopg import sql

from memory_platform.features.consolidation.entities import (
    EntityRow,
    grounded_aliases,
    merge_entities,
    refusal_reason,
)
from memory_platform.features.consolidation.types import Partition
from memory_platform.features.graph.embed import embed_graph_items, entity_text, text_hash
from memory_platform.features.graph.model import GraphModel, resolve_graph_model
from memory_platform.features.graph.store import claim_identity
from tests.graph.support import (
    GRAPH_TABLES,
    apply,
    batch,
    claim,
    dream,
    edge,
    entity,
    extraction,
    fact,
    one,
    refs_of,
    stable_ref,
    status_of,
    with_dreams,
)
from tests.support.openai_server import answer_chat

API_KEY = "sk-test-consolidation-1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d"
OFFLINE = GraphModel("extractive", "default", None)
WEISS_A = "Steuerbüro Weiss prepares the VAT return of Mandant Nord every month."
WEISS_B = "Kanzlei Weiss, also called Weiss Tax, advises Mandant Nord on payroll."
SHARED = "Weiss serves Mandant Nord."


def part(source) -> Partition:
    return Partition(source.instance_key, source.audience_kind, source.audience_key)


def audit_rows(db, instance, after_id=0):
    return db.execute(
        "SELECT id, operation, target_table, target_id, before_image, after_image, mapping"
        " FROM agent_memory_v2_cleanup_audit WHERE instance_key = %s AND id > %s"
        " ORDER BY id", (instance, after_id)).fetchall()


def last_audit_id(db) -> int:
    return one(db, "SELECT coalesce(max(id), 0) FROM agent_memory_v2_cleanup_audit")


def snapshot(db, instance) -> dict[str, dict[str, dict]]:
    """Every graph row of the instance as JSON, without ``updated_at`` (the touch trigger
    sets it on any update, so a hand reversal cannot restore it) and generated columns."""
    out = {}
    for table in GRAPH_TABLES:
        rows = db.execute(sql.SQL(
            "SELECT id::text, to_jsonb(t) - 'updated_at' - 'claim_tsv' FROM {} t"
            " WHERE instance_key = %s").format(sql.Identifier(table)), (instance,)).fetchall()
        out[table] = dict(rows)
    return out


def checksum(db, instance) -> tuple:
    """Row counts and an md5 over every column (updated_at included) of the graph tables
    and the instance's audit rows."""
    parts = []
    for table in (*GRAPH_TABLES, "agent_memory_v2_cleanup_audit"):
        parts.append(db.execute(sql.SQL(
            "SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, '|'"
            " ORDER BY t.id::text), '')) FROM {} t WHERE instance_key = %s").format(
            sql.Identifier(table)), (instance,)).fetchone())
    return tuple(parts)


def weiss_graph(db, settings, instance):
    """Two approved facts; batch A writes "Steuerbüro Weiss" (alias "Weiss Tax") with a
    claim and an edge to Mandant Nord; batch B writes "Kanzlei Weiss" (alias "weiss tax")
    (B cited with a Dream) with the colliding claim and edge, a claim whose OBJECT is Kanzlei
    Weiss, and an edge Steuerbüro -> Kanzlei that becomes a self-loop; a third fact backs
    Kanzlei Weiss alone. Both entities have three evidence rows: the older survives."""
    a = fact(db, settings, instance, WEISS_A)
    b0 = fact(db, settings, instance, WEISS_B)
    b = with_dreams(b0, dream(db, b0))
    apply(db, batch(a), extraction(
        [entity("w", "Steuerbüro Weiss", a, entity_type="organization",
                aliases=("Weiss Tax",)),
         entity("n", "Mandant Nord", a, entity_type="mandant")],
        [claim("w", "serves", a, obj="n", text=SHARED, confidence=0.6)],
        [edge("w", "n", "works_with", a)]))
    apply(db, batch(b), extraction(
        [entity("k", "Kanzlei Weiss", b, entity_type="organization", aliases=("weiss tax",)),
         entity("w", "Steuerbüro Weiss", b, entity_type="organization"),
         entity("n", "Mandant Nord", b, entity_type="mandant")],
        [claim("k", "serves", b, obj="n", text=SHARED, confidence=0.9),
         claim("n", "advised_by", b, obj="k")],
        [edge("k", "n", "works_with", b), edge("w", "k", "related_to", b)]))
    c = fact(db, settings, instance, "Kanzlei Weiss moved to the Hafenstrasse.")
    apply(db, batch(c), extraction([entity("k", "Kanzlei Weiss", c,
                                           entity_type="organization")]))
    ids = dict(db.execute(
        "SELECT label, id FROM agent_knowledge_entities WHERE instance_key = %s",
        (instance,)).fetchall())
    return a, b, ids


def claim_of(db, instance, subject, predicate):
    return db.execute(
        "SELECT id, status, subject_entity_id, object_entity_id, content_hash"
        " FROM agent_knowledge_claims WHERE instance_key = %s AND subject_entity_id = %s"
        " AND predicate = %s ORDER BY created_at", (instance, subject, predicate)).fetchall()


def edge_of(db, instance, source, target, relation):
    return one(db, "SELECT id FROM agent_knowledge_edges WHERE instance_key = %s"
                   " AND source_entity_id = %s AND target_entity_id = %s"
                   " AND relation_type = %s", instance, source, target, relation)


# --- the deterministic pass ------------------------------------------------------------------


def test_alias_intersection_merges_into_the_entity_with_more_evidence(db, settings, instance):
    a, b, ids = weiss_graph(db, settings, instance)
    weiss, kanzlei, nord = ids["Steuerbüro Weiss"], ids["Kanzlei Weiss"], ids["Mandant Nord"]
    serves_w = claim_of(db, instance, weiss, "serves")[0][0]
    serves_k = claim_of(db, instance, kanzlei, "serves")[0][0]
    advised = claim_of(db, instance, nord, "advised_by")[0][0]
    works_w = edge_of(db, instance, weiss, nord, "works_with")
    works_k = edge_of(db, instance, kanzlei, nord, "works_with")
    loop = edge_of(db, instance, weiss, kanzlei, "related_to")
    refs_w, refs_k = refs_of(db, "agent_knowledge_claims", serves_w), \
        refs_of(db, "agent_knowledge_claims", serves_k)

    result = merge_entities(db, settings, part(a), OFFLINE)

    (merge,) = result.merges
    assert (merge.survivor, merge.loser, merge.merged, merge.method) == (
        weiss, kanzlei, True, "deterministic")          # 2 evidence rows against 1
    assert "weiss tax" in merge.reason
    assert result.changed_entity_ids == [weiss]
    # The loser: quarantined, pointing at its survivor.
    status, metadata = one(db, "SELECT status, metadata FROM agent_knowledge_entities"
                               " WHERE id = %s", kanzlei)
    assert status == "quarantined" and metadata["mergedIntoEntityId"] == str(weiss)
    # The survivor: aliases unioned with the loser's label (normalised duplicates once).
    aliases, digest = one(db, "SELECT aliases, content_hash FROM agent_knowledge_entities"
                              " WHERE id = %s", weiss)
    assert aliases == ["Weiss Tax", "Kanzlei Weiss"]
    assert digest == text_hash(entity_text("Steuerbüro Weiss", "organization", aliases))
    # Claim collision: the loser's claim has more evidence (b's assertion and Dream rows), so
    # it is kept and re-pointed; the survivor's is superseded and keeps its own refs; the
    # kept one's refs are the union (its own first, unchanged), evidence moved over.
    assert status_of(db, "agent_knowledge_claims", serves_w) == "superseded"
    assert refs_of(db, "agent_knowledge_claims", serves_w) == refs_w
    kept = one(db, "SELECT status, subject_entity_id FROM agent_knowledge_claims"
                   " WHERE id = %s", serves_k)
    assert kept == ("active", weiss)
    assert refs_of(db, "agent_knowledge_claims", serves_k) == refs_k + [
        r for r in refs_w if r not in refs_k]
    assert stable_ref(a) in refs_of(db, "agent_knowledge_claims", serves_k)
    assert one(db, "SELECT count(*) FROM agent_knowledge_evidence WHERE claim_id = %s",
               serves_k) == 3                         # b's two rows and a's moved over
    # A claim naming the loser as object now names the survivor (identity hash follows).
    row = one(db, "SELECT object_entity_id, content_hash, status FROM agent_knowledge_claims"
                  " WHERE id = %s", advised)
    assert row == (weiss, claim_identity("advised_by", weiss, None, b.text), "active")
    # Edge collision, the same way: the loser's edge is kept, now from the survivor.
    assert status_of(db, "agent_knowledge_edges", works_w) == "superseded"
    assert one(db, "SELECT status, source_entity_id FROM agent_knowledge_edges"
                   " WHERE id = %s", works_k) == ("active", weiss)
    assert stable_ref(a) in refs_of(db, "agent_knowledge_edges", works_k)
    assert stable_ref(b) in refs_of(db, "agent_knowledge_edges", works_k)
    # The edge between the two became a self-loop: superseded.
    assert status_of(db, "agent_knowledge_edges", loop) == "superseded"
    # Evidence: the loser's rows of b (assertion, Dream) duplicate the survivor's and stay;
    # its row of the third fact moves.
    left = merge.mapping["evidence"]["left"]
    moved = merge.mapping["evidence"]["moved"]
    assert sorted(str(e) for (e,) in db.execute(
        "SELECT id FROM agent_knowledge_evidence WHERE entity_id = %s", (kanzlei,))) \
        == sorted(left)
    assert len(left) == 2
    assert [m for m in moved.values() if m["column"] == "entity_id"] == [
        {"column": "entity_id", "from": str(kanzlei), "to": str(weiss)}]
    assert one(db, "SELECT count(*) FROM agent_knowledge_evidence WHERE entity_id = %s",
               weiss) == 4
    # Every mutation has its audit row, of the right operation.
    ops = [r[1] for r in audit_rows(db, instance)]
    assert ops[0] == "entity_merge" and ops[-1] == "entity_quarantine"
    assert sorted(set(ops)) == sorted({"entity_merge", "claim_stale", "edge_stale",
                                       "claim_repoint", "edge_repoint", "evidence_repoint",
                                       "entity_quarantine"})
    assert result.audit_rows == len(ops)
    # A second run finds nothing more.
    again = merge_entities(db, settings, part(a), OFFLINE)
    assert again.merges == [] and again.audit_rows == 0


def test_a_merge_is_reversed_exactly_from_its_audit_rows(db, settings, instance):
    a, _, ids = weiss_graph(db, settings, instance)
    before = snapshot(db, instance)
    start = last_audit_id(db)
    run = dream(db, a)

    result = merge_entities(db, settings, part(a), OFFLINE, dream_id=run)

    assert snapshot(db, instance) != before
    audits = audit_rows(db, instance, start)
    assert len(audits) == result.audit_rows
    assert one(db, "SELECT count(*) FROM agent_memory_v2_cleanup_audit WHERE dream_id = %s",
               run) == len(audits)
    # The mapping names every row the merge changed (and nothing else).
    (merge,) = result.merges
    mapping = audits[0][6]
    assert audits[0][1] == "entity_merge" and mapping == merge.mapping
    named = {mapping["survivorId"], mapping["loserId"], *mapping["evidence"]["moved"]}
    for kind in ("claims", "edges"):
        m = mapping[kind]
        named |= {*m["repointed"], *m["refsUnioned"], *m["superseded"], *m["selfLoops"]}
    assert {r[3] for r in audits} == named
    assert mapping["entities"] == {str(ids["Kanzlei Weiss"]): str(ids["Steuerbüro Weiss"])}

    # By hand, as an operator would: each before-image written back, newest first.
    with db.transaction():
        for _, _, table, target, before_image, _, _ in reversed(audits):
            columns = [c for (c,) in db.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
                " AND is_generated = 'NEVER' AND column_name <> 'id'", (table,))]
            names = sql.SQL(", ").join(map(sql.Identifier, columns))
            db.execute(sql.SQL(
                "UPDATE {t} SET ({c}) = (SELECT {c} FROM jsonb_populate_record(NULL::{t}, %s))"
                " WHERE id = %s").format(t=sql.Identifier(table), c=names),
                (json.dumps(before_image), target))

    assert snapshot(db, instance) == before


def test_conflicting_linked_records_are_refused(db, settings, instance):
    nord = fact(db, settings, instance, "Mandant Nord GmbH and Mandant Nord KG are clients.")
    apply(db, batch(nord), extraction([
        entity("a", "Mandant Nord", nord, entity_type="mandant", linked=("mandantId", "nord-1"),
               refs={"mandantId": "nord-1"}),
        entity("b", "Mandant Nord", nord, entity_type="mandant", linked=("mandantId", "nord-2"),
               refs={"mandantId": "nord-2"})]))
    before = checksum(db, instance)

    result = merge_entities(db, settings, part(nord), OFFLINE)

    (refused,) = result.merges
    assert not refused.merged and "conflicting linked records" in refused.reason
    assert "nord-1" in refused.reason and "nord-2" in refused.reason
    assert result.audit_rows == 0 and checksum(db, instance) == before


def test_no_merge_across_partition_type_or_visibility(db, settings, instance):
    """The same name in Ada's private graph, Bob's private graph and the team graph, and as
    two types inside Ada's: nothing is merged."""
    ada = fact(db, settings, instance, "Projekt Apollo starts in May.")
    bob = fact(db, settings, instance, "Projekt Apollo is Bob's favourite.", user="bob")
    team = fact(db, settings, instance, "Projekt Apollo has a budget.", visibility="team")
    for source in (ada, bob, team):
        apply(db, batch(source), extraction(
            [entity("p", "Projekt Apollo", source, entity_type="project")]))
    apply(db, batch(ada), extraction(
        [entity("c", "projekt  APOLLO", ada, entity_type="concept", aliases=("Apollo",))]))
    assert one(db, "SELECT count(*) FROM agent_knowledge_entities WHERE instance_key = %s",
               instance) == 4
    before = checksum(db, instance)

    for source in (ada, bob, team):
        result = merge_entities(db, settings, part(source), OFFLINE)
        assert result.merges == [] and result.audit_rows == 0
    assert checksum(db, instance) == before

    # The rule itself, on values that could never be candidates.
    rows = {label: EntityRow(*r[:6], list(r[6]), *r[7:]) for label, r in (
        (f"{r[2]}/{r[3]}/{r[4]}", r) for r in db.execute(
            "SELECT e.id, e.instance_key, e.visibility_scope, e.audience_key, e.entity_type,"
            " e.label, e.aliases, e.linked_record_type, e.linked_record_id, e.created_at, 0"
            " FROM agent_knowledge_entities e WHERE e.instance_key = %s", (instance,)))}
    ada_project = rows[f"private/{ada.audience_key}/project"]
    assert "cross-visibility" in refusal_reason(ada_project,
                                                rows[f"private/{bob.audience_key}/project"])
    assert "cross-visibility" in refusal_reason(ada_project,
                                                rows[f"team/{team.audience_key}/project"])
    assert "cross-type" in refusal_reason(ada_project,
                                          rows[f"private/{ada.audience_key}/concept"])
    other = EntityRow(**{**vars(ada_project), "id": uuid.uuid4(), "instance_key": "elsewhere"})
    assert "cross-instance" in refusal_reason(ada_project, other)


def test_a_dry_run_proposes_the_merge_and_mutates_nothing(db, settings, instance):
    a, _, ids = weiss_graph(db, settings, instance)
    before = checksum(db, instance)

    proposal = merge_entities(db, settings, part(a), OFFLINE, dry_run=True)

    assert checksum(db, instance) == before
    (merge,) = proposal.merges
    assert merge.merged and merge.loser == ids["Kanzlei Weiss"]
    assert proposal.audit_rows == 0 and proposal.changed_entity_ids == []
    real = merge_entities(db, settings, part(a), OFFLINE)
    assert [m.as_json() for m in real.merges] == [m.as_json() for m in proposal.merges]
    assert real.merges[0].mapping == merge.mapping


# --- the vector pass -------------------------------------------------------------------------


def acme_graph(db, settings, instance):
    """Three organisations without a shared name and a person, all embedded."""
    a = fact(db, settings, instance, "ACME GmbH, often just ACME, buys our payroll module.")
    changes = apply(db, batch(a), extraction(
        [entity("x", "ACME GmbH", a, entity_type="organization"),
         entity("y", "Acme Corporation", a, entity_type="organization"),
         entity("z", "Beta AG", a, entity_type="organization"),
         entity("p", "Ada", a, entity_type="person")],
        [claim("x", "buys", a, value="payroll module")]))
    embed_graph_items(db, settings, instance, changes.changed_entity_ids, [])
    ids = dict(db.execute("SELECT label, id FROM agent_knowledge_entities"
                          " WHERE instance_key = %s", (instance,)).fetchall())
    return a, ids


@pytest.fixture
def http_settings(settings, openai_server):
    return settings.model_copy(update={
        "graph_model": "judge-model", "maintenance_base_url": openai_server.base_url,
        "maintenance_api_key": API_KEY, "maintenance_retry_backoff_seconds": 0.01,
        "maintenance_idle_timeout_seconds": 5.0,
        "maintenance_phase_timeout_seconds_override": 10.0,
        "consolidation_entity_similarity_threshold": 0.0})


def pair_ids(request_body) -> dict[frozenset, str]:
    user = next(m["content"] for m in request_body["messages"] if m["role"] == "user")
    return {frozenset((p["left"]["label"], p["right"]["label"])): p["pairId"]
            for p in json.loads(user)["pairs"]}


def answer(decisions):
    return json.dumps({"schemaVersion": 1, "decisions": decisions})


def script_answer(server, build) -> list[dict]:
    """Answer the next chat request with ``build(request body)`` as the assistant text (the
    pair ids are only known from the request); answers the bodies seen."""
    seen: list[dict] = []

    def respond(request):
        seen.append(request.json)
        return answer_chat(request, build(request.json))

    server.script("chat/completions", respond=respond)
    return seen


def test_the_vector_pass_merges_what_the_model_judges_the_same(db, http_settings, instance,
                                                               openai_server):
    a, ids = acme_graph(db, http_settings, instance)
    model = resolve_graph_model(db, http_settings, instance)
    acme = frozenset(("ACME GmbH", "Acme Corporation"))

    def build(body):
        return answer([{"pairId": pid, "same": labels == acme,
                        "aliases": ["ACME", "Zeta Holdings"] if labels == acme else [],
                        "reason": "one company" if labels == acme else "two companies"}
                       for labels, pid in pair_ids(body).items()])

    seen = script_answer(openai_server, build)
    result = merge_entities(db, http_settings, part(a), model)

    (body,) = seen
    assert body["model"] == "judge-model"
    user = json.loads(next(m["content"] for m in body["messages"] if m["role"] == "user"))
    assert len(user["pairs"]) == 3                      # organisations only, never the person
    pair = next(p for p in user["pairs"]
                if frozenset((p["left"]["label"], p["right"]["label"])) == acme)
    assert {"label", "type", "aliases", "claims"} <= set(pair["left"])
    assert any("ACME GmbH" in c for c in pair["left"]["claims"] + pair["right"]["claims"])
    merged = [m for m in result.merges if m.merged]
    assert len(merged) == 1 and merged[0].method == "vector"
    assert {merged[0].survivor, merged[0].loser} == {ids["ACME GmbH"], ids["Acme Corporation"]}
    assert "one company" in merged[0].reason
    refused = [m for m in result.merges if not m.merged]
    assert len(refused) == 2 and all("two companies" in m.reason for m in refused)
    survivor_aliases = one(db, "SELECT aliases FROM agent_knowledge_entities WHERE id = %s",
                           merged[0].survivor)
    assert "ACME" in survivor_aliases and "Zeta Holdings" not in survivor_aliases
    assert any(d["code"] == "alias_dropped" and d["aliases"] == ["Zeta Holdings"]
               for d in result.diagnostics)
    assert one(db, "SELECT status FROM agent_knowledge_entities WHERE id = %s",
               merged[0].loser) == "quarantined"
    assert result.changed_entity_ids == [merged[0].survivor]


@pytest.mark.parametrize("content,code", [
    ("not json at all", "malformed_output"),
    (answer([{"pairId": "p99", "same": True, "aliases": [], "reason": "x"}]),
     "malformed_output"),
    (json.dumps({"schemaVersion": 2, "decisions": []}), "malformed_output"),
])
def test_a_malformed_answer_merges_nothing(db, http_settings, instance, openai_server,
                                           content, code):
    a, _ = acme_graph(db, http_settings, instance)
    model = resolve_graph_model(db, http_settings, instance)
    before = checksum(db, instance)
    openai_server.script_chat(content=content, times=3)

    result = merge_entities(db, http_settings, part(a), model)

    assert result.merges == [] and result.audit_rows == 0
    assert [d["code"] for d in result.diagnostics] == [code]
    assert checksum(db, instance) == before


def test_an_answer_of_another_model_merges_nothing(db, http_settings, instance,
                                                   openai_server):
    a, ids = acme_graph(db, http_settings, instance)
    model = resolve_graph_model(db, http_settings, instance)
    before = checksum(db, instance)
    everything_same = answer([{"pairId": f"p{i}", "same": True, "aliases": [],
                               "reason": "x"} for i in (1, 2, 3)])
    openai_server.script_chat(content=everything_same, model="another-model", times=3)

    result = merge_entities(db, http_settings, part(a), model)

    assert result.merges == [] and checksum(db, instance) == before
    assert [d["code"] for d in result.diagnostics] == ["model_unavailable"]


def test_offline_the_vector_pass_adds_nothing(db, settings, instance):
    a, _ = acme_graph(db, settings, instance)
    before = checksum(db, instance)
    lenient = settings.model_copy(update={"consolidation_entity_similarity_threshold": 0.0})

    result = merge_entities(db, lenient, part(a), OFFLINE)

    assert result.pairs_considered == 3
    assert [m.merged for m in result.merges] == [False, False, False]
    assert all("offline: labels differ" in m.reason for m in result.merges)
    assert checksum(db, instance) == before


def test_no_active_generation_means_no_vector_pass(db, settings, instance):
    partition = Partition(instance, "private", "nobody")
    result = merge_entities(db, settings, partition, OFFLINE)
    assert result.merges == []
    assert [d["code"] for d in result.diagnostics] == ["no_active_generation"]


def test_aliases_must_occur_as_whole_words():
    kept, dropped = grounded_aliases(["ACME", "Acm", "Müller AG", " "],
                                     ["The ACME GmbH", "mueller", "Firma Muller AG"])
    assert kept == ["ACME", "Müller AG"] and dropped == ["Acm", " "]


def test_the_model_never_sees_a_pair_of_conflicting_linked_records(db, http_settings, instance,
                                                                   openai_server):
    a = fact(db, http_settings, instance, "Mandant Nord and Mandant Sued share an office.")
    changes = apply(db, batch(a), extraction([
        entity("n", "Mandant Nord", a, entity_type="mandant", linked=("mandantId", "nord"),
               refs={"mandantId": "nord"}),
        entity("s", "Mandant Sued", a, entity_type="mandant", linked=("mandantId", "sued"),
               refs={"mandantId": "sued"})]))
    embed_graph_items(db, http_settings, instance, changes.changed_entity_ids, [])
    model = resolve_graph_model(db, http_settings, instance)
    before = checksum(db, instance)

    result = merge_entities(db, http_settings, part(a), model)

    (refused,) = result.merges
    assert refused.method == "vector" and not refused.merged
    assert "conflicting linked records" in refused.reason
    assert openai_server.requests("chat/completions") == []
    assert checksum(db, instance) == before
