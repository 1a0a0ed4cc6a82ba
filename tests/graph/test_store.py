"""apply_extraction and remove_dream_refs against the real database: a repeated extraction
adds nothing, a later batch reinforces (refs unioned, never replaced), entities are found
again by linked record, stable subject refs or normalised label inside one audience, and the
per-Dream cleanup removes only that Dream's refs."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg import sql

from memory_platform.features.graph.store import (
    apply_extraction,
    normalized_label,
    remove_dream_refs,
)
from memory_platform.features.graph.types import GraphBatch, GraphWorkRetryable
from tests.graph.support import (
    apply,
    batch,
    claim,
    counts,
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

NORD = "Mandant Nord files its VAT return with Steuerbüro Weiss every month."
NORD_2 = "Steuerbüro Weiss answers questions of Mandant Nord within two days."


def nord_extraction(a, b=None):
    """Mandant Nord -> Steuerbüro Weiss: two entities, a claim, an edge, and a self-loop."""
    cited = (a,) if b is None else (a, b)
    return extraction(
        [entity("e1", "Mandant Nord", *cited, entity_type="mandant",
                linked=("mandantId", "nord"), refs={"mandantId": "nord"}),
         entity("e2", "Steuerbüro Weiss", *cited, entity_type="organization")],
        [claim("e1", "files_vat_with", a, obj="e2")],
        [edge("e1", "e2", "works_with", *cited), edge("e1", "e1", "related_to", a)])


def test_a_second_apply_of_the_same_extraction_adds_nothing(db, settings, instance):
    a = fact(db, settings, instance, NORD, refs={"mandantId": "nord"})
    first = apply(db, batch(a), nord_extraction(a))

    assert (first.entities_added, first.claims_added, first.edges_added) == (2, 1, 1)
    assert first.evidence_added == 4          # one assertion row per entity, claim, edge
    assert len(first.changed_entity_ids) == 2 and len(first.changed_claim_ids) == 1
    (new,) = first.new_claims
    assert new == {"claimId": str(first.changed_claim_ids[0]), "subject": "Mandant Nord",
                   "predicate": "files_vat_with", "object": "Steuerbüro Weiss",
                   "assertionText": NORD, "assertionIds": [str(a.assertion_id)]}
    before = counts(db, instance)
    assert before == {"agent_knowledge_entities": 2, "agent_knowledge_claims": 1,
                      "agent_knowledge_edges": 1, "agent_knowledge_evidence": 4}

    again = apply(db, batch(a), nord_extraction(a))

    assert counts(db, instance) == before
    assert {k: v for k, v in again.counts().items() if v} == {}
    assert again.changed_entity_ids == again.changed_claim_ids == again.new_claims == []


def test_rows_carry_the_batch_audience_and_the_private_owner(db, settings, instance):
    a = fact(db, settings, instance, NORD, user="ada", refs={"mandantId": "nord"})
    apply(db, batch(a), nord_extraction(a))

    for table in ("agent_knowledge_entities", "agent_knowledge_claims",
                  "agent_knowledge_edges"):
        rows = db.execute(sql.SQL(
            "SELECT visibility_scope, audience_key, subject_refs->>'userId'"
            " FROM {} WHERE instance_key = %s").format(sql.Identifier(table)),
            (instance,)).fetchall()
        assert rows and set(rows) == {("private", "ada", "ada")}, table
    claim_row = one(db, "SELECT subject_refs, source_refs, valid_from, valid_to, content_hash"
                        " FROM agent_knowledge_claims WHERE instance_key = %s", instance)
    assert claim_row[0] == {"mandantId": "nord", "userId": "ada"}
    assert claim_row[1] == [stable_ref(a)]
    assert claim_row[2] is None and claim_row[3] is None and claim_row[4]
    excerpt = one(db, "SELECT excerpt, source_memory_id FROM agent_knowledge_evidence"
                      " WHERE instance_key = %s AND claim_id IS NOT NULL", instance)
    assert excerpt == (NORD, a.memory_id)


def test_a_second_batch_citing_another_assertion_reinforces(db, settings, instance):
    a = fact(db, settings, instance, NORD, refs={"mandantId": "nord"})
    b = fact(db, settings, instance, NORD_2, refs={"mandantId": "nord"})
    first = apply(db, batch(a), nord_extraction(a))
    claim_id = first.changed_claim_ids[0]
    edge_id = one(db, "SELECT id FROM agent_knowledge_edges WHERE instance_key = %s", instance)

    second = extraction(
        [entity("x", "Mandant Nord", b, entity_type="mandant", linked=("mandantId", "nord"),
                aliases=("Nord",)),
         entity("y", "Steuerbüro Weiss", b, entity_type="organization")],
        [claim("x", "files_vat_with", b, a, obj="y", text=NORD, confidence=0.95)],
        [edge("x", "y", "works_with", b, confidence=0.2)])
    changes = apply(db, batch(a, b), second)

    assert (changes.entities_added, changes.claims_added, changes.edges_added) == (0, 0, 0)
    assert (changes.claims_reinforced, changes.edges_reinforced) == (1, 1)
    assert changes.entities_updated == 1      # Mandant Nord gained the alias "Nord"
    assert changes.changed_entity_ids == [first.changed_entity_ids[0]]
    assert changes.changed_claim_ids == [] and changes.new_claims == []
    both = sorted([stable_ref(a), stable_ref(b)], key=lambda r: r["assertionId"])
    assert sorted(refs_of(db, "agent_knowledge_claims", claim_id),
                  key=lambda r: r["assertionId"]) == both
    assert sorted(refs_of(db, "agent_knowledge_edges", edge_id),
                  key=lambda r: r["assertionId"]) == both
    assert one(db, "SELECT confidence FROM agent_knowledge_claims WHERE id = %s",
               claim_id) == pytest.approx(0.95)
    assert one(db, "SELECT confidence FROM agent_knowledge_edges WHERE id = %s",
               edge_id) == pytest.approx(0.7)             # the higher one stays
    assert one(db, "SELECT aliases FROM agent_knowledge_entities WHERE id = %s",
               first.changed_entity_ids[0]) == ["Nord"]
    # Evidence grew by the new assertion's rows only: 2 entities + claim + edge.
    assert changes.evidence_added == 4
    assert counts(db, instance)["agent_knowledge_evidence"] == 8

    # The first batch again: its refs are already there; nothing is replaced or lost.
    apply(db, batch(a), nord_extraction(a))
    assert len(refs_of(db, "agent_knowledge_claims", claim_id)) == 2


def test_validity_comes_from_the_backing_assertions_and_only_widens(db, settings, instance):
    now = datetime.now(UTC)
    a = fact(db, settings, instance, NORD)
    b = fact(db, settings, instance, NORD_2)
    a_window = type(a)(**{**vars(a), "valid_from": now - timedelta(days=2),
                          "valid_to": now + timedelta(days=10)})
    b_window = type(b)(**{**vars(b), "valid_from": now - timedelta(days=5),
                          "valid_to": now + timedelta(days=20)})
    x = extraction([entity("e", "Mandant Nord", a_window, entity_type="mandant")],
                   [claim("e", "files_vat_with", a_window, value="monthly")])
    claim_id = apply(db, batch(a_window), x).changed_claim_ids[0]
    window = "SELECT valid_from, valid_to FROM agent_knowledge_claims WHERE id = %s"
    assert one(db, window, claim_id) == (a_window.valid_from, a_window.valid_to)

    wider = extraction([entity("e", "Mandant Nord", b_window, entity_type="mandant")],
                       [claim("e", "files_vat_with", b_window, a_window, value="monthly",
                              text=NORD)])
    apply(db, batch(a_window, b_window), wider)
    assert one(db, window, claim_id) == (b_window.valid_from, b_window.valid_to)

    open_ended = extraction([entity("e", "Mandant Nord", b, entity_type="mandant")],
                            [claim("e", "files_vat_with", b, a_window, value="monthly",
                                   text=NORD)])
    apply(db, batch(a_window, b), open_ended)
    assert one(db, window, claim_id) == (None, None)


def test_entities_are_found_again_by_link_subject_refs_or_label(db, settings, instance):
    a = fact(db, settings, instance, "Mandant Süd GmbH and Frau Müller meet on Monday.",
             refs={"mandantId": "sued"})
    first = apply(db, batch(a), extraction([
        entity("l", "Mandant Nord", a, entity_type="mandant", linked=("mandantId", "nord")),
        entity("s", "Süd GmbH", a, entity_type="mandant", refs={"mandantId": "sued"}),
        entity("p", "Frau Müller", a, entity_type="person")]))
    assert first.entities_added == 3

    again = apply(db, batch(a), extraction([
        entity("l", "Nord", a, entity_type="mandant", linked=("mandantId", "nord")),
        entity("s", "Sued", a, entity_type="mandant", refs={"mandantId": "sued"}),
        entity("p", "FRAU MULLER", a, entity_type="person"),
        # Another type, another record: new entities, never merged into the ones above.
        entity("t", "Frau Müller", a, entity_type="organization"),
        entity("o", "Nord", a, entity_type="mandant", linked=("mandantId", "nord-2"))]))

    assert (again.entities_added, again.entities_updated) == (2, 2)
    aliases = dict(db.execute(
        "SELECT label, aliases FROM agent_knowledge_entities WHERE instance_key = %s"
        " AND entity_type = 'mandant' AND linked_record_id IS DISTINCT FROM 'nord-2'",
        (instance,)).fetchall())
    assert aliases == {"Mandant Nord": ["Nord"], "Süd GmbH": ["Sued"]}
    # "FRAU MULLER" is "Frau Müller" without case and diacritics: no new alias either.
    assert one(db, "SELECT aliases FROM agent_knowledge_entities WHERE instance_key = %s"
                   " AND entity_type = 'person'", instance) == []
    assert normalized_label("FRAU  MÜLLER") == normalized_label("Frau Muller") == "frau muller"


def test_an_audience_never_reuses_another_audiences_entity(db, settings, instance):
    private = fact(db, settings, instance, NORD, user="ada", visibility="private")
    team = fact(db, settings, instance, NORD_2, user="ada", visibility="team")
    apply(db, batch(private), extraction([entity("e", "Mandant Nord", private)]))
    changes = apply(db, batch(team), extraction([entity("e", "Mandant Nord", team)]))

    assert changes.entities_added == 1
    assert sorted(db.execute(
        "SELECT visibility_scope, audience_key FROM agent_knowledge_entities"
        " WHERE instance_key = %s", (instance,)).fetchall()) == [("private", "ada"),
                                                                  ("team", instance)]


def test_a_batch_with_a_source_of_another_audience_is_refused(db, settings, instance):
    private = fact(db, settings, instance, NORD, user="ada", visibility="private")
    team = fact(db, settings, instance, NORD_2, user="ada", visibility="team")
    mixed = GraphBatch(instance, "team", instance, (team, private))

    with pytest.raises(GraphWorkRetryable) as caught, db.transaction():
        apply_extraction(db, mixed, extraction([entity("e", "Mandant Nord", private)]))
    assert caught.value.code == "instance_mismatch"
    assert sum(counts(db, instance).values()) == 0


def test_remove_dream_refs_removes_only_that_dreams_refs(db, settings, instance):
    plain = fact(db, settings, instance, NORD)
    d1, d2 = dream(db, plain), dream(db, plain)
    first = with_dreams(plain, d1)
    apply(db, batch(first), nord_extraction(first))
    claim_id = one(db, "SELECT id FROM agent_knowledge_claims WHERE instance_key = %s",
                   instance)
    # A later Dream supports the same assertion: its ref joins, the earlier Dream's stays.
    rebuilt = with_dreams(plain, d2)
    apply(db, batch(rebuilt), nord_extraction(rebuilt))
    assert {r.get("dreamId") for r in refs_of(db, "agent_knowledge_claims", claim_id)} == {
        None, str(d1), str(d2)}
    dream_evidence = ("SELECT count(*) FROM agent_knowledge_evidence WHERE instance_key = %s"
                      " AND evidence_kind = 'dream' AND dream_id = %s")
    assert one(db, dream_evidence, instance, d2) == 4

    with db.transaction():
        changes = remove_dream_refs(db, instance, d2)

    assert changes.refs_removed == 2           # the claim's and the edge's
    assert (changes.claims_retracted, changes.edges_retracted) == (0, 0)
    assert changes.entities_quarantined == 0
    assert refs_of(db, "agent_knowledge_claims", claim_id) == sorted(
        [stable_ref(plain), {"dreamId": str(d1)}], key=lambda r: sorted(r.items()))
    assert one(db, dream_evidence, instance, d2) == 0
    assert one(db, dream_evidence, instance, d1) == 4
    assert one(db, "SELECT count(*) FROM agent_knowledge_evidence WHERE instance_key = %s"
                   " AND evidence_kind = 'assertion'", instance) == 4
    assert status_of(db, "agent_knowledge_claims", claim_id) == "active"


def test_an_item_left_without_a_stable_ref_is_superseded(db, settings, instance):
    a = fact(db, settings, instance, NORD)
    d1 = dream(db, a)
    sourced = with_dreams(a, d1)
    apply(db, batch(sourced), extraction(
        [entity("e1", "Mandant Nord", sourced), entity("e2", "Steuerbüro Weiss", sourced),
         entity("e3", "Frau Weiss", sourced, entity_type="person")],
        [claim("e1", "files_vat_with", sourced, obj="e2")],
        [edge("e3", "e2", "works_at", sourced)]))
    # A row only the Dream vouches for (as a rebuild by hand would leave it).
    db.execute("UPDATE agent_knowledge_edges SET source_refs = %s::jsonb"
               " WHERE instance_key = %s", (f'[{{"dreamId": "{d1}"}}]', instance))

    with db.transaction():
        changes = remove_dream_refs(db, instance, d1)

    assert (changes.claims_retracted, changes.edges_retracted) == (0, 1)
    assert changes.entities_quarantined == 1   # Frau Weiss: only the edge named her
    quarantined = one(db, "SELECT label, metadata->>'reason' FROM agent_knowledge_entities"
                          " WHERE instance_key = %s AND status = 'quarantined'", instance)
    assert quarantined == ("Frau Weiss", "orphaned_by_dream_cleanup")
    assert one(db, "SELECT count(*) FROM agent_knowledge_entities WHERE instance_key = %s"
                   " AND status = 'active'", instance) == 2


def test_concurrent_applies_of_one_extraction_write_it_once(db, settings, instance,
                                                            module_database_url):
    a = fact(db, settings, instance, NORD, refs={"mandantId": "nord"})
    start = threading.Barrier(2)

    def run() -> None:
        with psycopg.connect(module_database_url, autocommit=True) as conn:
            start.wait()
            apply(conn, batch(a), nord_extraction(a))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert counts(db, instance) == {"agent_knowledge_entities": 2, "agent_knowledge_claims": 1,
                                    "agent_knowledge_edges": 1, "agent_knowledge_evidence": 4}


def test_the_database_refuses_duplicates_a_writer_without_the_lock_would_add(db, settings,
                                                                            instance):
    a = fact(db, settings, instance, NORD)
    apply(db, batch(a), nord_extraction(a))
    claim_row = one(db, "SELECT subject_entity_id, predicate, object_entity_id, assertion_text,"
                        " visibility_scope, audience_key, content_hash"
                        " FROM agent_knowledge_claims WHERE instance_key = %s", instance)
    with pytest.raises(psycopg.errors.UniqueViolation):
        db.execute("INSERT INTO agent_knowledge_claims (instance_key, subject_entity_id,"
                   " predicate, object_entity_id, assertion_text, visibility_scope,"
                   " audience_key, content_hash) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                   (instance, *claim_row))
    with pytest.raises(psycopg.errors.UniqueViolation):
        db.execute("INSERT INTO agent_knowledge_entities (instance_key, entity_type, label,"
                   " normalized_label, visibility_scope, audience_key)"
                   " SELECT instance_key, entity_type, upper(label), normalized_label,"
                   " visibility_scope, audience_key FROM agent_knowledge_entities"
                   " WHERE instance_key = %s AND linked_record_id IS NULL", (instance,))
    with pytest.raises(psycopg.errors.UniqueViolation):
        db.execute("INSERT INTO agent_knowledge_evidence (instance_key, claim_id, evidence_kind,"
                   " source_memory_id, assertion_id, excerpt)"
                   " SELECT instance_key, claim_id, evidence_kind, source_memory_id,"
                   " assertion_id, 'again' FROM agent_knowledge_evidence"
                   " WHERE instance_key = %s AND claim_id IS NOT NULL", (instance,))
