"""Stale pruning against the real database: only old claims and edges without a currently
supported ref are superseded (each after its audit row), orphans are quarantined after
theirs, other partitions and supported or newer rows are untouched, and a dry run proposes
the same and writes nothing."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.features.consolidation.stale import prune_stale
from memory_platform.features.consolidation.types import Partition
from tests.graph import knowledge_rows as kr
from tests.graph.support import GRAPH_TABLES, fact, one, stable_ref, status_of

OLD = datetime.now(UTC) - timedelta(days=200)
RECENT = datetime.now(UTC) - timedelta(days=10)


def checksum(db, instance) -> tuple:
    parts = []
    for table in (*GRAPH_TABLES, "agent_memory_v2_cleanup_audit"):
        parts.append(db.execute(sql.SQL(
            "SELECT count(*), md5(coalesce(string_agg(to_jsonb(t)::text, '|'"
            " ORDER BY t.id::text), '')) FROM {} t WHERE instance_key = %s").format(
            sql.Identifier(table)), (instance,)).fetchone())
    return tuple(parts)


def unsupported() -> Jsonb:
    """A ref of an assertion that does not exist (and a Dream ref, which never supports)."""
    return Jsonb([{"assertionId": str(uuid.uuid4()), "memoryId": str(uuid.uuid4())},
                  {"dreamId": str(uuid.uuid4())}])


def world(db, settings, instance):
    """Ada's private graph: old/new, supported/unsupported claims and edges, an entity only
    an old unsupported claim names, and the same old unsupported claim in Bob's graph."""
    ada = fact(db, settings, instance, "Ada keeps the VAT calendar of Mandant Nord.")
    supported = Jsonb([stable_ref(ada)])
    rows = {}
    at = {"kind": "private", "key": "ada"}
    e = rows["entities"] = {n: kr.entity(db, instance, n, **at)
                            for n in ("hub", "orphan", "kept", "far")}
    rows["old_unsupported"] = kr.claim(db, instance, e["orphan"], "Orphan fact.",
                                       source_refs=unsupported(), updated_at=OLD, **at)
    rows["old_supported"] = kr.claim(db, instance, e["kept"], "Kept fact.",
                                     source_refs=supported, updated_at=OLD, **at)
    rows["new_unsupported"] = kr.claim(db, instance, e["hub"], "New fact.",
                                       source_refs=unsupported(), updated_at=RECENT, **at)
    rows["old_edge"] = kr.edge(db, instance, e["hub"], e["far"], source_refs=unsupported(),
                               updated_at=OLD, **at)
    rows["old_supported_edge"] = kr.edge(db, instance, e["kept"], e["hub"],
                                         relation="knows", source_refs=supported,
                                         updated_at=OLD, **at)
    bob = kr.entity(db, instance, "bob's", kind="private", key="bob")
    rows["other_partition"] = kr.claim(db, instance, bob, "Bob's old fact.", kind="private",
                                       key="bob", source_refs=unsupported(), updated_at=OLD)
    return rows


def test_only_old_unsupported_rows_are_superseded_and_orphans_quarantined(db, settings,
                                                                          instance):
    rows = world(db, settings, instance)
    e = rows["entities"]
    start = one(db, "SELECT coalesce(max(id), 0) FROM agent_memory_v2_cleanup_audit")

    result = prune_stale(db, settings, Partition(instance, "private", "ada"))

    assert result.pruned_claims == [rows["old_unsupported"]]
    assert result.pruned_edges == [rows["old_edge"]]
    claims, edges = "agent_knowledge_claims", "agent_knowledge_edges"
    assert status_of(db, claims, rows["old_unsupported"]) == "superseded"
    assert status_of(db, edges, rows["old_edge"]) == "superseded"
    for untouched in ("old_supported", "new_unsupported", "other_partition"):
        assert status_of(db, claims, rows[untouched]) == "active", untouched
    assert status_of(db, edges, rows["old_supported_edge"]) == "active"
    # The orphan (only the pruned claim named it) and the edge's far end are quarantined;
    # the hub still has a claim, "kept" a supported one.
    statuses = dict(db.execute("SELECT id, status FROM agent_knowledge_entities"
                               " WHERE id = ANY(%s)", (list(e.values()),)).fetchall())
    assert statuses == {e["orphan"]: "quarantined", e["far"]: "quarantined",
                        e["hub"]: "active", e["kept"]: "active"}
    assert result.quarantined == 2
    reason = one(db, "SELECT metadata->>'reason' FROM agent_knowledge_entities WHERE id = %s",
                 e["orphan"])
    assert reason == "orphaned_by_stale_pruning"
    # Each mutation after its audit row holding the before-image.
    audits = db.execute(
        "SELECT operation, target_id, before_image->>'status' FROM"
        " agent_memory_v2_cleanup_audit WHERE instance_key = %s AND id > %s ORDER BY id",
        (instance, start)).fetchall()
    assert audits == [("claim_stale", str(rows["old_unsupported"]), "active"),
                      ("edge_stale", str(rows["old_edge"]), "active"),
                      *sorted([("entity_quarantine", str(e["orphan"]), "active"),
                               ("entity_quarantine", str(e["far"]), "active")],
                              key=lambda r: uuid.UUID(r[1]))]
    assert result.audit_rows == 4
    # Refs are left as they were; a second run finds nothing.
    again = prune_stale(db, settings, Partition(instance, "private", "ada"))
    assert (again.pruned_claims, again.pruned_edges, again.quarantined) == ([], [], 0)


def test_the_window_follows_the_setting(db, settings, instance):
    rows = world(db, settings, instance)
    short = settings.model_copy(update={"consolidation_stale_days": 5.0})

    result = prune_stale(db, short, Partition(instance, "private", "ada"))

    assert sorted(result.pruned_claims) == sorted([rows["old_unsupported"],
                                                   rows["new_unsupported"]])


def test_a_dry_run_proposes_the_same_and_mutates_nothing(db, settings, instance):
    rows = world(db, settings, instance)
    partition = Partition(instance, "private", "ada")
    before = checksum(db, instance)

    proposal = prune_stale(db, settings, partition, dry_run=True)

    assert checksum(db, instance) == before
    assert proposal.audit_rows == 0
    real = prune_stale(db, settings, partition)
    assert (proposal.pruned_claims, proposal.pruned_edges, proposal.quarantined) == (
        real.pruned_claims, real.pruned_edges, real.quarantined) == (
        [rows["old_unsupported"]], [rows["old_edge"]], 2)
