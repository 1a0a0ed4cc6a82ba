"""One partition, one key: a partition whose audience key holds a character the Dagster key
percent-encodes (a space, ``/``, ``,``, a bracket, ``%``) is consolidated once per run, by its
own step, and never again by the sweep of the same run (the sweep used to compare the plain
key with the encoded one and took it for a quiet partition)."""

from __future__ import annotations

import pytest

from memory_platform.assets.dreaming import batch_run_config
from memory_platform.definitions import build_definitions
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.orchestration.consolidation_step import consolidation_step
from memory_platform.orchestration.dream_step import dream_step
from memory_platform.orchestration.graph_step import graph_step
from tests.dagster.conftest import add_partitions, new_instance_key, seed_private

AWKWARD_USERS = ["ana maria", "ana/maria", "ana,maria", "ana[1]", "ana%20maria"]
# A user id holding "%" cannot have a profile built yet (maintenance.profiles: a
# ProgrammingError, not part of this test), so the whole chain runs for the others and the
# consolidation step with its sweep alone for that one.
CHAIN_USERS = AWKWARD_USERS[:-1]


def swept_envelopes(db, instance_key: str) -> list[tuple[str, str, str]]:
    rows = db.execute(
        "SELECT stats_json -> 'consolidation' -> 'sweep' FROM agent_memory_dreams"
        " WHERE instance_key = %s AND stats_json ? 'consolidation'",
        (instance_key,)).fetchall()
    return [(e["envelope"]["instanceKey"], e["envelope"]["audienceKind"],
             e["envelope"]["audienceKey"]) for (sweep,) in rows for e in (sweep or [])]


@pytest.mark.parametrize("user", CHAIN_USERS)
def test_the_batch_consolidates_an_encoded_partition_once(db, settings, resources, instance,
                                                           user):
    partition = seed_private(db, settings, new_instance_key(), user, count=4)
    assert "%" in partition.partition_key
    job = build_definitions(resources).resolve_job_def("dream_batch")

    result = job.execute_in_process(run_config=batch_run_config([partition.partition_key]),
                                    instance=instance, raise_on_error=False)

    assert result.success
    mine = (partition.instance_key, partition.kind, partition.key)
    assert mine not in swept_envelopes(db, partition.instance_key)
    consolidated = [e for e in result.get_asset_materialization_events()
                    if e.asset_key.to_user_string() == "consolidation"]
    assert [e.partition for e in consolidated] == [partition.partition_key]


def test_the_asset_job_consolidates_an_encoded_partition_once(db, settings, resources,
                                                               instance):
    partition = seed_private(db, settings, new_instance_key(), "ana maria", count=4)
    add_partitions(instance, partition)
    job = build_definitions(resources).resolve_job_def("dream_audience_job")

    result = job.execute_in_process(instance=instance, partition_key=partition.partition_key)

    assert result.success
    mine = (partition.instance_key, partition.kind, partition.key)
    assert mine not in swept_envelopes(db, partition.instance_key)


def test_the_consolidation_step_does_not_sweep_its_own_percent_partition(db, settings):
    partition = seed_private(db, settings, new_instance_key(), "ana%20maria", count=4)
    key = partition.partition_key
    assert dream_step(db, settings, key).problem is None
    graph_step(db, settings, key)

    step = consolidation_step(db, settings, key)

    assert [s.partition.partition_key for s in step.swept] == []
    mine = (partition.instance_key, partition.kind, partition.key)
    assert mine not in swept_envelopes(db, partition.instance_key)


def test_a_key_round_trips_through_its_encoding():
    for user in AWKWARD_USERS + ["a...b", "a|b"]:
        partition = Partition("inst", "private", user)
        assert Partition.from_partition_key(partition.partition_key) == partition
