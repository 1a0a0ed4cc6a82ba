"""The daily chain's kit (memory_platform.orchestration.chain): the steps are ordered by
their upstreams, every step of the chain is an asset of the Dream's job with its checks, and
the batch walks the same steps: a failed blocking check stops the rest of that partition's
chain, as it stops the asset job's run."""

from __future__ import annotations

import dataclasses

import pytest

import memory_platform.assets.dreaming as dreaming_assets
from memory_platform.assets.dreaming import CHAIN, batch_run_config
from memory_platform.definitions import build_definitions
from memory_platform.features.dreaming.checks import CheckOutcome
from memory_platform.orchestration.chain import Check, Step, StepReport, ordered
from memory_platform.orchestration.keys import CONSOLIDATION
from tests.dagster.conftest import new_instance_key, seed_team


def _step(key: str, *after: str) -> Step:
    return Step(key, after=after, run=lambda ctx: StepReport({}), group="g", description="")


def test_steps_follow_their_upstreams_and_a_cycle_is_refused():
    steps = ordered([_step("c", "b"), _step("a", "x"), _step("b", "a")])
    assert [s.key for s in steps] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="cycle"):
        ordered([_step("a", "b"), _step("b", "a")])


def test_every_chain_step_is_an_asset_of_the_dream_job_with_its_checks(resources):
    definitions = build_definitions(resources)
    graph = definitions.resolve_asset_graph()
    job = definitions.resolve_job_def("dream_audience_job")
    selected = {key.to_user_string() for key in job.asset_layer.selected_asset_keys}
    for step in CHAIN:
        assert step.key in selected
        node = graph.get(next(k for k in graph.get_all_asset_keys()
                              if k.to_user_string() == step.key))
        assert sorted(k.to_user_string() for k in node.parent_keys) == sorted(step.after)
        assert {k.name for k in node.check_keys} == {c.name for c in step.checks}


def test_a_failed_blocking_check_stops_the_partitions_chain_in_the_batch(
        db, settings, resources, instance, monkeypatch):
    def failing(ctx):
        return CheckOutcome("consolidation_mutations_audited", False, 1, 1, "failed on purpose",
                            [])

    chain = tuple(dataclasses.replace(step, checks=(Check(
        step.checks[0].name, step.checks[0].description, failing),))
        if step.key == CONSOLIDATION else step for step in CHAIN)
    monkeypatch.setattr(dreaming_assets, "CHAIN", chain)
    partition = seed_team(db, settings, new_instance_key())
    job = build_definitions(resources).resolve_job_def("dream_batch")

    result = job.execute_in_process(run_config=batch_run_config([partition.partition_key]),
                                    instance=instance, raise_on_error=False)

    assert not result.success
    materialised = {e.asset_key.to_user_string()
                    for e in result.get_asset_materialization_events()}
    assert {"knowledge_graph", "consolidation"} <= materialised
    assert not materialised & {"user_profiles", "retention", "reembedding"}
    assert "consolidation_sweep" in materialised     # the batch's end still sweeps
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "1 problem(s) in 1 partition(s)" in failure.event_specific_data.error.message
