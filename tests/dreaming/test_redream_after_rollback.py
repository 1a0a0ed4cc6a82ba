"""A Dream after a rollback: the new Dream re-creates what the rolled-back one had made, and
it, not the rolled-back Dream, gets the credit (issue 31, item 2): ``dream show`` lists its
accepted items, the inspector counts and filters its graph, and the re-created claims cite
it. Rolling the new Dream back reverts them again."""

from __future__ import annotations

from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.inspect import dream_detail
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.rollback import rollback_dream
from memory_platform.features.graph import views
from memory_platform.features.graph.build import build_dream_graph
from memory_platform.features.graph.model import GraphModel
from memory_platform.features.projection.outbox import process_outbox
from memory_platform.shared.access import AccessContext
from memory_platform.shared.llm.selection import OFFLINE_MODEL
from tests.dreaming.support import TEAM_SESSIONS, remember

OFFLINE = GraphModel(OFFLINE_MODEL, "explicit", None)


def _dream_with_graph(db, settings, instance):
    result = run_dream_partition(db, settings, Partition(instance, "team", instance),
                                 model=OFFLINE_MODEL)
    assert result.status in ("completed", "partial"), result.diagnostics
    process_outbox(db, settings)
    build_dream_graph(db, settings, result.dream_id, model=OFFLINE)
    return result


def _dreamed_then_rolled_back(db, settings, instance):
    for session, texts in TEAM_SESSIONS.items():
        for text in texts:
            remember(db, settings, AccessContext(instance, user_id="ada", session_key=session),
                     text, visibility="team")
    first = _dream_with_graph(db, settings, instance)
    assert first.activated_ids, "the extractive Dream activates something to roll back"
    assert rollback_dream(db, first.dream_id, settings=settings).tombstoned
    return first


def _active_claim_refs(db, instance) -> list[list[dict]]:
    return [r[0] for r in db.execute(
        "SELECT source_refs FROM agent_knowledge_claims WHERE instance_key = %s"
        " AND status = 'active' ORDER BY id", (instance,))]


def test_a_dream_after_a_rollback_lists_the_items_it_re_created(db, settings, instance):
    first = _dreamed_then_rolled_back(db, settings, instance)

    second = _dream_with_graph(db, settings, instance)

    accepted = dream_detail(db, instance, second.dream_id)["accepted"]
    assert {a["assertionId"] for a in accepted} >= {str(a) for a in second.activated_ids}
    recreated = [a for a in accepted if a["assertionId"] in {str(i) for i in first.assertion_ids}]
    assert recreated and all(a["created"] for a in recreated)
    # Re-created as a new one would be: activated, or a candidate waiting for a person.
    assert {a["status"] for a in recreated} <= {"active", "candidate"}
    assert second.stats["created"] == len(recreated)
    # The rolled-back Dream no longer claims the rows the new one re-created.
    before = {a["assertionId"] for a in dream_detail(db, instance, first.dream_id)["accepted"]}
    assert not before & {a["assertionId"] for a in recreated}


def test_a_dream_after_a_rollback_has_its_own_graph_and_the_claims_cite_it(
        db, settings, instance):
    first = _dreamed_then_rolled_back(db, settings, instance)

    second = _dream_with_graph(db, settings, instance)

    counts = views.dream_graph_counts(db, instance, [second.dream_id])[str(second.dream_id)]
    assert counts["entities"] > 0 and counts["claims"] > 0
    ctx = AccessContext(instance, user_id="ada")
    found = views.view_graph(db, ctx, "all", dream_id=str(second.dream_id))
    assert any(n["kind"] == "fact" for n in found["nodes"])
    refs = _active_claim_refs(db, instance)
    assert refs and all({"dreamId": str(second.dream_id)} in r for r in refs)
    assert not any({"dreamId": str(first.dream_id)} in r for r in refs)


def test_rolling_back_the_new_dream_reverts_what_it_re_created(db, settings, instance):
    first = _dreamed_then_rolled_back(db, settings, instance)
    second = _dream_with_graph(db, settings, instance)

    rolled = rollback_dream(db, second.dream_id, settings=settings)

    reverted = set(rolled.tombstoned) | set(rolled.restored)
    assert set(second.activated_ids) <= reverted
    states = dict(db.execute("SELECT id, status FROM agent_memory_assertions"
                             " WHERE id = ANY(%s)", (list(first.assertion_ids),)).fetchall())
    assert set(states.values()) == {"tombstoned"}


def test_a_rollback_takes_the_claims_of_its_rows_out_of_the_graph_at_once(
        db, settings, instance):
    """No claim stands on a tombstoned row until the outbox worker's next pass: a Dream run
    right after the rollback would reinforce it (and cite both Dreams) instead."""
    first = _dreamed_then_rolled_back(db, settings, instance)

    cited = {ref.get("assertionId") for refs in _active_claim_refs(db, instance)
             for ref in refs}
    assert not cited & {str(a) for a in first.assertion_ids}
    refs = _active_claim_refs(db, instance)
    assert not any({"dreamId": str(first.dream_id)} in r for r in refs)
