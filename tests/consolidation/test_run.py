"""A partition's consolidation as a whole (offline judge): the three passes, the recall and
graph following in the same run, the sweep of quiet partitions (skipping the processed one),
the result on the dream row, and a dry run that writes nothing."""

from __future__ import annotations

from memory_platform.features.consolidation.checks import unaudited_mutations
from memory_platform.features.consolidation.run import (
    consolidate_partition,
    quiet_partitions,
    record_on_dream,
    sweep,
)
from memory_platform.features.consolidation.types import Partition
from memory_platform.features.dreaming.partitions import Partition as DreamPartition
from memory_platform.features.dreaming.runs import start_dream
from memory_platform.features.graph.build import process_graph_jobs
from memory_platform.features.graph.model import GraphModel
from memory_platform.shared.llm.selection import OFFLINE_MODEL
from tests.consolidation.test_pairs import fact
from tests.support.tables import row_counts

OFFLINE = GraphModel(OFFLINE_MODEL, "explicit", None)
RULE, RULE_AGAIN = ("Invoices above 10,000 euros need a second approval.",
                    "Invoices above 10,000 euros need a second approval")


def status(db, assertion_id) -> str:
    return db.execute("SELECT status FROM agent_memory_assertions WHERE id = %s",
                      (assertion_id,)).fetchone()[0]


def claims(db, instance: str) -> list[str]:
    return [r[0] for r in db.execute(
        "SELECT assertion_text FROM agent_knowledge_claims WHERE instance_key = %s"
        " AND status = 'active' ORDER BY 1", (instance,))]


def test_a_partition_folds_its_duplicate_and_the_graph_follows_in_the_same_run(
        db, settings, instance):
    older = fact(db, settings, instance, RULE)
    newer = fact(db, settings, instance, RULE_AGAIN, user="bob")
    process_graph_jobs(db, settings, instance_key=instance, model=OFFLINE)
    assert claims(db, instance) == [RULE_AGAIN, RULE]
    team = Partition(instance, "team", instance)

    result = consolidate_partition(db, settings, team, model=OFFLINE)

    assert result.summary()["duplicates"] == 1 and result.summary()["auditRows"] >= 1
    assert status(db, older) == "superseded" and status(db, newer) == "active"
    assert claims(db, instance) == [RULE_AGAIN]       # retracted in the same run
    assert unaudited_mutations(db, instance, "team", instance)["passed"]
    again = consolidate_partition(db, settings, team, model=OFFLINE)
    assert again.summary()["pairsJudged"] == 0      # nothing left to fold


def test_a_dry_run_returns_the_decisions_and_writes_nothing(db, settings, instance):
    fact(db, settings, instance, RULE)
    fact(db, settings, instance, RULE_AGAIN, user="bob")
    before = row_counts(db, instance)

    result = consolidate_partition(db, settings, Partition(instance, "team", instance),
                                   model=OFFLINE, dry_run=True)

    assert [d.outcome for d in result.slots.pair_decisions] == ["duplicate"]
    assert row_counts(db, instance) == before
    assert db.execute("SELECT count(*) FROM agent_memory_v2_cleanup_audit"
                      " WHERE instance_key = %s", (instance,)).fetchone()[0] == 0


def test_the_sweep_takes_quiet_partitions_but_not_the_processed_one(db, settings, instance):
    fact(db, settings, instance, RULE)
    fact(db, settings, instance, RULE_AGAIN, user="bob")
    fact(db, settings, instance, RULE, visibility="private")
    fact(db, settings, instance, RULE_AGAIN, visibility="private")
    fact(db, settings, instance, "Only one private fact of bob.", user="bob",
         visibility="private")                           # one assertion: not eligible
    team = Partition(instance, "team", instance)

    quiet = quiet_partitions(db, instance_key=instance, limit=5,
                             exclude={team.partition_key})
    swept = sweep(db, settings, instance_key=instance, processed={team.partition_key})

    assert [p.partition_key for p in quiet] == [f"{instance}/private/ada"]
    assert [s.partition.partition_key for s in swept] == [f"{instance}/private/ada"]
    assert swept[0].summary()["duplicates"] == 1
    dream = start_dream(db, DreamPartition(instance, "team", instance), model=OFFLINE_MODEL,
                        trigger="manual", dry_run=False, orchestrator_run_id=None, stats={})
    record_on_dream(db, dream, consolidate_partition(db, settings, team, model=OFFLINE),
                    swept)
    recorded = db.execute("SELECT stats_json -> 'consolidation' FROM agent_memory_dreams"
                          " WHERE id = %s", (dream,)).fetchone()[0]
    assert recorded["duplicates"] == 1
    assert recorded["sweep"][0]["envelope"] == {"instanceKey": instance,
                                                "audienceKind": "private",
                                                "audienceKey": "ada"}
    assert recorded["sweep"][0]["result"]["duplicates"] == 1
